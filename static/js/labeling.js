// Label form behaviour: themes and sub-themes filtered by the choice above, sub-theme search by
// name and example details, click-to-load images, and (on the labeling page) the keyboard.
(() => {
  const dataTag = document.getElementById("taxonomy-data");
  const nodes = dataTag ? JSON.parse(dataTag.textContent) : [];
  const byId = new Map(nodes.map((n) => [String(n.id), n]));
  const typeSelect = document.getElementById("id_issue_type");
  const themeSelect = document.getElementById("id_theme");
  const subSelect = document.getElementById("id_sub_theme");
  const search = document.getElementById("subtheme-search");
  const hits = document.getElementById("subtheme-hits");
  const fpBox = document.getElementById("id_is_false_positive");
  const labelForm = document.getElementById("label-form");

  // Issue images: loaded only when the reader asks for them.
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.img-placeholder");
    if (!button) return;
    const img = document.createElement("img");
    img.src = button.dataset.src;
    img.alt = button.dataset.alt || "";
    img.referrerPolicy = "no-referrer";
    img.className = "issue-image";
    button.replaceWith(img);
  });

  if (!typeSelect || !themeSelect || !subSelect) return;

  // Options keep their server-rendered order; filtering only hides and shows them.
  const filterOptions = (select, parentId) => {
    let keep = false;
    for (const option of select.options) {
      if (!option.value) continue;
      const visible = !parentId || option.dataset.parent === parentId;
      option.hidden = !visible;
      option.disabled = !visible;
      if (visible && option.selected) keep = true;
    }
    if (!keep) select.value = "";
  };
  const visibleThemes = () => [...themeSelect.options].filter((o) => o.value && !o.hidden);

  const syncLevels = () => {
    filterOptions(themeSelect, typeSelect.value);
    filterOptions(subSelect, themeSelect.value || "none");
  };
  typeSelect.addEventListener("change", syncLevels);
  themeSelect.addEventListener("change", () => filterOptions(subSelect, themeSelect.value || "none"));
  syncLevels();

  const setFalsePositive = (on) => {
    if (!fpBox) return;
    fpBox.checked = on;
    document.getElementById("label-levels")?.classList.toggle("muted", on);
  };
  fpBox?.addEventListener("change", () => setFalsePositive(fpBox.checked));
  if (fpBox) setFalsePositive(fpBox.checked);

  const choose = (node) => {
    const theme = byId.get(String(node.parent));
    typeSelect.value = String(theme.parent);
    syncLevels();
    themeSelect.value = String(theme.id);
    filterOptions(subSelect, themeSelect.value);
    subSelect.value = String(node.id);
    setFalsePositive(false);
    // On the resolve page a chosen sub-theme is a new final label, not an annotator's.
    const sourceNew = document.getElementById("source-new");
    if (sourceNew) sourceNew.checked = true;
  };

  // Example details are fetched once, on the first search (the browser caches them).
  const detailsUrl = document.getElementById("taxonomy-details")?.dataset.url;
  let detailsLoaded = null;
  const loadDetails = () => {
    if (!detailsLoaded && detailsUrl) {
      detailsLoaded = fetch(detailsUrl, { credentials: "same-origin" })
        .then((response) => (response.ok ? response.json() : { nodes: [] }))
        .then((data) => {
          for (const full of data.nodes) {
            const node = byId.get(String(full.id));
            if (node) node.details = full.details;
          }
          runSearch();
        })
        .catch(() => {});
    }
  };

  // A hit's place: the chosen theme's sub-themes first, then the chosen type's, then the rest;
  // within each, matches by code or name before matches by an example detail.
  const searchRank = (node, byName) => {
    const theme = byId.get(String(node.parent));
    let place = 2;
    if (themeSelect.value && String(node.parent) === themeSelect.value) place = 0;
    else if (typeSelect.value && theme && String(theme.parent) === typeSelect.value) place = 1;
    return place * 2 + (byName ? 0 : 1);
  };

  // Sub-theme search: every word must appear in the code, name or one example detail.
  const runSearch = () => {
    loadDetails();
    const words = search.value.toLowerCase().split(/\s+/).filter(Boolean);
    hits.replaceChildren();
    if (!words.length) {
      hits.classList.add("hidden");
      return;
    }
    const matches = [];
    for (const node of nodes) {
      if (node.level !== 3) continue;
      const own = `${node.code} ${node.name}`.toLowerCase();
      const byName = words.every((w) => own.includes(w));
      const detail = byName
        ? undefined
        : (node.details || []).find((d) => words.every((w) => `${own} ${d.toLowerCase()}`.includes(w)));
      if (byName || detail) matches.push({ node, detail, rank: searchRank(node, byName) });
    }
    // Stable sort: within a rank, the taxonomy's order.
    matches.sort((a, b) => a.rank - b.rank);
    const found = matches.slice(0, 12).map((m) => [m.node, m.detail]);
    for (const [node, detail] of found) {
      const item = document.createElement("li");
      const button = document.createElement("button");
      button.type = "button";
      button.className = "hit";
      button.dataset.id = node.id;
      button.textContent = `${node.code} ${node.name}`;
      if (detail) {
        const small = document.createElement("small");
        small.textContent = ` — ${detail}`;
        button.append(small);
      }
      button.addEventListener("click", () => {
        choose(node);
        search.value = "";
        runSearch();
        subSelect.focus();
      });
      item.append(button);
      hits.append(item);
    }
    if (!found.length) {
      const item = document.createElement("li");
      item.className = "empty";
      item.textContent = "No sub-theme matches.";
      hits.append(item);
    }
    hits.classList.remove("hidden");
  };
  search?.addEventListener("input", runSearch);
  search?.addEventListener("keydown", (event) => {
    if (event.key === "Enter") {
      // Enter in the search picks the first hit instead of submitting.
      event.preventDefault();
      hits.querySelector("button.hit")?.click();
    }
  });

  // Keyboard: on the labeling page, and on the lead's resolve page, where the same keys build
  // the final label and Enter records it and opens the next disagreement.
  const resolveForm = document.getElementById("resolve-form");
  const keyForm = labelForm || resolveForm;
  if (!keyForm) return;
  const help = document.getElementById("help");
  const toggleHelp = () => help && (help.open ? help.close() : help.showModal());
  document.getElementById("show-help")?.addEventListener("click", toggleHelp);
  // Closing the help (Escape or its button) may leave the focus on its Close button, where
  // Enter would press that button instead of submitting the label.
  help?.addEventListener("close", () => {
    if (help.contains(document.activeElement)) document.activeElement.blur();
  });
  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  const submitButton = document.getElementById(labelForm ? "submit-label" : "resolve-next");
  const submit = () => keyForm.requestSubmit(submitButton);
  // On the resolve page a key builds a new label: choose "a new label" over an annotator's.
  const newLabel = () => {
    const source = document.getElementById("source-new");
    if (source && resolveForm) source.checked = true;
  };
  if (resolveForm) {
    for (const control of [typeSelect, themeSelect, subSelect, fpBox]) {
      control?.addEventListener("change", newLabel);
    }
  }

  // Themes by number: a digit picks the n-th theme at once; a second digit within DIGIT_DELAY
  // makes a two-digit number (1 then 0 is the 10th theme) when the type has that many.
  const DIGIT_DELAY = 700;
  let firstDigit = null;
  let firstDigitAt = 0;
  const pickTheme = (n) => {
    const theme = visibleThemes()[n - 1];
    if (!theme) return false;
    typeSelect.value = theme.dataset.parent;
    syncLevels();
    themeSelect.value = theme.value;
    filterOptions(subSelect, theme.value);
    newLabel();
    return true;
  };
  const chooseThemeByDigit = (key) => {
    const now = Date.now();
    if (firstDigit !== null && now - firstDigitAt <= DIGIT_DELAY) {
      const two = firstDigit * 10 + Number(key);
      firstDigit = null;
      if (pickTheme(two)) return;
    }
    if (key === "0") return;
    firstDigit = Number(key);
    firstDigitAt = now;
    pickTheme(firstDigit);
  };

  // Tests (and impatient people) can tell when the keys start to work.
  document.body.dataset.labelingReady = "1";
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.metaKey) return;
    const target = event.target;
    if (event.key === "Enter" && event.ctrlKey) {
      event.preventDefault();
      submit();
      return;
    }
    if (typing(target) && target.type !== "checkbox" && target.type !== "radio") {
      if (event.key === "Escape") target.blur();
      return;
    }
    if (event.ctrlKey) return;
    const key = event.key;
    if (key === "?") {
      event.preventDefault();
      toggleHelp();
    } else if (key === "Enter") {
      // A focused button or link keeps its own Enter, unless it is in a closed dialog.
      const control = target.tagName === "BUTTON" || target.tagName === "A";
      if (control && !target.closest("dialog:not([open])")) return;
      event.preventDefault();
      submit();
    } else if (key === "s") {
      const skip = document.getElementById("skip");
      if (skip) {
        event.preventDefault();
        skip.click();
      }
    } else if (key === "n") {
      event.preventDefault();
      setFalsePositive(!fpBox.checked);
      newLabel();
    } else if (key === "w") {
      const summary = document.getElementById("id_summary");
      if (summary) {
        event.preventDefault();
        summary.focus();
      }
    } else if (key === "/") {
      event.preventDefault();
      search?.focus();
    } else if (/^[0-9]$/.test(key)) {
      event.preventDefault();
      if (fpBox?.checked) {
        const reasons = document.querySelectorAll("input[name=false_positive_reason]");
        if (reasons[Number(key) - 1]) reasons[Number(key) - 1].checked = true;
        return;
      }
      chooseThemeByDigit(key);
    } else if (key === "p") {
      const previous = document.getElementById("previous-issue");
      if (previous) {
        event.preventDefault();
        previous.click();
      }
    } else {
      const option = [...typeSelect.options].find((o) => o.dataset.key === key.toLowerCase());
      if (option && key.length === 1) {
        event.preventDefault();
        typeSelect.value = option.value;
        setFalsePositive(false);
        syncLevels();
        newLabel();
      }
    }
  });
})();
