// Label form behaviour: themes and sub-themes filtered by the choice above, sub-theme search by
// name and example details, the taxonomy panel that follows the choice, the guideline (open
// the first time a text is shown, then closed unless reopened), click-to-load images, and the
// keyboard (on the labeling page, and on the resolve page with digits to adopt an annotation
// and a key per resolution method).
// Texts come from the Django JavaScript catalogue (/jsi18n/, a deferred script before this one);
// the keys are the same in every language.
(() => {
  const { gettext, ngettext, interpolate } = window;
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

  // Collapsible panels that remember being closed: open unless this reader closed them.
  const storage = {
    get: (key) => {
      try {
        return localStorage.getItem(key);
      } catch {
        return null; // storage off: panels simply open
      }
    },
    set: (key, value) => {
      try {
        localStorage.setItem(key, value);
      } catch {
        /* storage off or full: nothing to remember */
      }
    },
  };
  const remembered = (details, key) => {
    if (!details || !key) return;
    details.open = storage.get(key) !== "closed";
    details.addEventListener("toggle", () => storage.set(key, details.open ? "open" : "closed"));
  };
  // The project's guideline: its key holds a digest of the text, so an edited guideline opens
  // again; the keys of this project's earlier texts are dropped.
  const guideline = document.getElementById("guideline");
  if (guideline) {
    const key = guideline.dataset.key;
    const prefix = key.slice(0, key.lastIndexOf(":") + 1);
    try {
      for (const old of Object.keys(localStorage)) {
        if (old.startsWith(prefix) && old !== key) localStorage.removeItem(old);
      }
    } catch {
      /* storage off */
    }
    // Open the first time this text is shown; after that closed (read once), unless the
    // annotator opens it again, which is remembered like a close.
    const state = storage.get(key);
    guideline.open = state === null || state === "open";
    if (state === null) storage.set(key, "seen");
    const summary = guideline.querySelector("summary");
    // The reader's own toggles only (a toggle event fires for the line above too).
    summary?.addEventListener("click", () =>
      setTimeout(() => storage.set(key, guideline.open ? "open" : "closed")),
    );
  }
  const guidePanel = document.getElementById("taxonomy-guide");
  remembered(guidePanel, "taxonomy-guide");

  if (!typeSelect || !themeSelect || !subSelect) return;

  // The taxonomy panel: the chosen type's description with its themes (numbered as the digit
  // keys pick them), or, once a theme is chosen, the theme's description and its sub-themes with
  // their descriptions and example details. Built from the taxonomy alone, as text.
  const guide = document.getElementById("taxonomy-guide-body");
  const EXAMPLES_SHOWN = 4;
  const childrenOf = (id) => nodes.filter((n) => String(n.parent) === String(id));
  const el = (tag, className, text) => {
    const element = document.createElement(tag);
    if (className) element.className = className;
    if (text !== undefined) element.textContent = text;
    return element;
  };
  const described = (tag, node, headTag) => {
    const element = el(tag, `guide-node guide-level-${node.level}`);
    element.dataset.code = node.code;
    element.append(el(headTag, "guide-name", `${node.code} ${node.name}`));
    if (node.description) element.append(el("p", "guide-description", node.description));
    // Shown in the reader's language (the project's choice): the English as written beside it.
    if (node.writtenDescription) {
      const written = el("p", "guide-description", node.writtenDescription);
      written.lang = "en";
      element.append(written);
    }
    return element;
  };
  const exampleList = (details) => {
    const list = el("ul", "guide-examples");
    for (const detail of details) list.append(el("li", "", detail.trim()));
    return list;
  };
  const examples = (node) => {
    const details = (node.details || []).filter((d) => d.trim());
    if (!details.length) return [];
    const shown = [
      el("p", "guide-examples-head", gettext("Examples:")),
      exampleList(details.slice(0, EXAMPLES_SHOWN)),
    ];
    if (details.length > EXAMPLES_SHOWN) {
      const more = el("details", "guide-more");
      const hidden = details.length - EXAMPLES_SHOWN;
      const label = ngettext("%s more example", "%s more examples", hidden);
      more.append(el("summary", "", interpolate(label, [hidden])));
      more.append(exampleList(details.slice(EXAMPLES_SHOWN)));
      shown.push(more);
    }
    return shown;
  };
  // The picker's state, said by a screen reader (the polite live region #label-status): the
  // letter and digit keys change the selects without moving the focus, so nothing else would.
  const status = document.getElementById("label-status");
  const chosenText = (select) => (select.value ? select.selectedOptions[0].textContent.trim() : "");
  const announce = () => {
    if (!status) return;
    let text;
    if (fpBox?.checked) {
      text = gettext("Not LLM-related selected");
    } else if (!typeSelect.value) {
      text = gettext("No type selected");
    } else {
      const chosen = {
        type: chosenText(typeSelect),
        theme: chosenText(themeSelect),
        sub: chosenText(subSelect),
      };
      // Whole sentences, so that a translation can order the words its own way.
      let format = gettext("Type: %(type)s selected");
      if (subSelect.value) {
        format = gettext("Type: %(type)s, theme: %(theme)s, sub-theme: %(sub)s selected");
      } else if (themeSelect.value) {
        format = gettext("Type: %(type)s, theme: %(theme)s selected");
      }
      text = interpolate(format, chosen, true);
    }
    if (status.textContent !== text) status.textContent = text;
  };
  const renderGuide = () => {
    announce();
    if (!guide) return;
    const type = typeSelect.value ? byId.get(typeSelect.value) : undefined;
    const theme = themeSelect.value ? byId.get(themeSelect.value) : undefined;
    const parts = [];
    if (!type) {
      parts.push(el("p", "hint", gettext("Choose a type (q r b) to read its themes here.")));
    } else {
      parts.push(described("section", type, "h3"));
      if (!theme) {
        parts.push(el("p", "hint", gettext("Its themes (the digit keys pick them):")));
        const list = el("ol", "guide-themes");
        for (const child of childrenOf(type.id)) list.append(described("li", child, "h4"));
        parts.push(list);
      } else {
        const section = described("section", theme, "h3");
        section.id = "guide-theme";
        const subs = childrenOf(theme.id);
        const subsHead = subs.length ? gettext("Sub-themes:") : gettext("No sub-themes.");
        section.append(el("p", "hint", subsHead));
        const list = el("ul", "guide-subs");
        for (const sub of subs) {
          const item = described("li", sub, "h4");
          if (String(sub.id) === subSelect.value) {
            item.classList.add("chosen");
          } else {
            // Read, then choose it here (the panel is redrawn, so the focus returns to the page
            // and the keys go on working).
            const pick = el("button", "linkbutton guide-pick", gettext("Choose"));
            pick.type = "button";
            pick.setAttribute(
              "aria-label",
              interpolate(gettext("Choose %(code)s %(name)s"), { code: sub.code, name: sub.name }, true),
            );
            pick.addEventListener("click", () => choose(sub));
            item.querySelector(".guide-name").after(pick);
          }
          item.append(...examples(sub));
          list.append(item);
        }
        section.append(list);
        parts.push(section);
      }
    }
    guide.replaceChildren(...parts);
  };

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
    renderGuide();
  };
  typeSelect.addEventListener("change", syncLevels);
  themeSelect.addEventListener("change", () => {
    filterOptions(subSelect, themeSelect.value || "none");
    renderGuide();
  });
  subSelect.addEventListener("change", renderGuide);
  syncLevels();

  const setFalsePositive = (on) => {
    if (!fpBox) return;
    fpBox.checked = on;
    document.getElementById("label-levels")?.classList.toggle("muted", on);
    announce();
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
    renderGuide();
    setFalsePositive(false);
    // On the resolve page a chosen sub-theme is a new final label, not an annotator's.
    const sourceNew = document.getElementById("source-new");
    if (sourceNew) sourceNew.checked = true;
  };

  // Descriptions and example details are fetched once, on the first search or at once for the
  // taxonomy panel (the browser caches them).
  const detailsUrl = document.getElementById("taxonomy-details")?.dataset.url;
  let detailsLoaded = null;
  const loadDetails = () => {
    if (!detailsLoaded && detailsUrl) {
      detailsLoaded = fetch(detailsUrl, { credentials: "same-origin" })
        .then((response) => (response.ok ? response.json() : { nodes: [] }))
        .then((data) => {
          for (const full of data.nodes) {
            const node = byId.get(String(full.id));
            if (node) {
              node.details = full.details;
              node.description = full.description || "";
              node.writtenDescription = full.written_description || "";
            }
          }
          runSearch();
          renderGuide();
        })
        .catch(() => {});
    }
  };
  if (guide) loadDetails();

  // A hit's place: the chosen theme's sub-themes first, then the chosen type's, then the rest;
  // within each, matches by code or name before matches by an example detail.
  const searchRank = (node, byName) => {
    const theme = byId.get(String(node.parent));
    let place = 2;
    if (themeSelect.value && String(node.parent) === themeSelect.value) place = 0;
    else if (typeSelect.value && theme && String(theme.parent) === typeSelect.value) place = 1;
    return place * 2 + (byName ? 0 : 1);
  };

  // Sub-theme search: every word must appear in the code, name, description (in the reader's
  // language where shown so) or one example detail.
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
      const own = `${node.code} ${node.name} ${node.description || ""}`.toLowerCase();
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
      item.textContent = gettext("No sub-theme matches.");
      hits.append(item);
    }
    hits.classList.remove("hidden");
  };
  search?.addEventListener("input", runSearch);
  // Words typed before this deferred script ran (it waits for the translation catalogue); the
  // panel's details, once loaded, search them again.
  if (search?.value) runSearch();
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

  // The resolve page: a digit adopts the n-th annotation (its label fills the form and is
  // recorded as that annotation's), until a type key (q r b) or n starts a new label, after
  // which digits pick themes as on the labeling page.
  const adoptable = resolveForm
    ? [...resolveForm.querySelectorAll("input[name=source][data-adopt]")]
    : [];
  let buildingNew = false;
  const adopt = (n) => {
    const radio = adoptable[n - 1];
    if (!radio) return false;
    const d = radio.dataset;
    setFalsePositive(d.fp === "1");
    if (d.fp === "1") {
      for (const reason of resolveForm.querySelectorAll("input[name=false_positive_reason]")) {
        reason.checked = reason.value === d.reason;
      }
    } else {
      typeSelect.value = d.type;
      syncLevels();
      themeSelect.value = d.theme;
      filterOptions(subSelect, d.theme);
      subSelect.value = d.sub || "";
      renderGuide();
    }
    radio.checked = true; // after the fields, whose own changes choose "a new label"
    for (const card of document.querySelectorAll(".annotation-card")) {
      card.classList.toggle("adopted", card.dataset.adopt === String(n));
    }
    return true;
  };

  // The resolve page: how the final label was decided has no default; a key per method (c, d:
  // the option's data-key) chooses it. A method the issue does not allow (consensus with no
  // discussion) is disabled, and its key points at the reason instead.
  const methodRadios = resolveForm
    ? [...resolveForm.querySelectorAll("input[name=method][data-key]")]
    : [];
  const methodError = document.getElementById("method-error");
  const chooseMethod = (key) => {
    const radio = methodRadios.find((r) => r.dataset.key === key);
    if (!radio) return false;
    if (radio.disabled) {
      const reason = document.getElementById(radio.getAttribute("aria-describedby") || "");
      reason?.classList.add("flash");
      return true;
    }
    radio.checked = true;
    if (methodError) methodError.hidden = true;
    return true;
  };
  for (const radio of methodRadios) {
    // Submitted without a method (Enter too soon): say so beside the choices, in the page's
    // language, besides the browser's own bubble.
    radio.addEventListener("invalid", () => {
      if (methodError) methodError.hidden = false;
    });
    radio.addEventListener("change", () => {
      if (methodError) methodError.hidden = true;
    });
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
    renderGuide();
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
      buildingNew = true;
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
    } else if (key.length === 1 && methodRadios.length && chooseMethod(key.toLowerCase())) {
      event.preventDefault();
    } else if (/^[1-9]$/.test(key) && adoptable.length && !buildingNew && adopt(Number(key))) {
      event.preventDefault();
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
        buildingNew = true;
        typeSelect.value = option.value;
        setFalsePositive(false);
        syncLevels();
        newLabel();
      }
    }
  });
})();
