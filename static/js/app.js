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
