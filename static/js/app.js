// Small site-wide behaviour. Page-specific scripts live beside this file.
document.addEventListener("change", (event) => {
  const picker = event.target.closest(".version-picker");
  if (picker) {
    window.location = picker.dataset.urlTemplate.replace("/0/", `/${picker.value}/`);
  }
});

// A <select class="autosubmit"> submits its form when changed.
document.addEventListener("change", (event) => {
  if (event.target.matches("select.autosubmit")) event.target.form.requestSubmit();
});

// htmx starts listening only at DOMContentLoaded, after every deferred script (the translation
// catalogue among them) has arrived: a search typed before then would be lost. Send it now.
document.addEventListener("DOMContentLoaded", () => {
  for (const box of document.querySelectorAll("input[type=search][hx-get]")) {
    if (box.value !== box.defaultValue) window.htmx?.trigger(box, "search");
  }
});
