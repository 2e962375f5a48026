// Taxonomy edit form: show only the fields the chosen operation uses, and list the details of
// the chosen node for a split. Node data comes from the json_script tag "taxonomy-nodes".
(() => {
  const form = document.getElementById("edit-form");
  if (!form) return;
  const nodes = JSON.parse(document.getElementById("taxonomy-nodes").textContent);
  // The Django JavaScript catalogue (/jsi18n/) runs before this deferred script.
  const { gettext, interpolate } = window;
  const byCode = new Map(nodes.map((n) => [n.code, n]));
  const uses = {
    rename: ["node", "name", "description"],
    move: ["node", "other"],
    merge: ["node", "other"],
    split: ["node", "name", "description", "details"],
    add: ["node", "name", "description"],
  };
  const op = form.querySelector("[name=operation]");
  const node = form.querySelector("[name=node]");
  const details = form.querySelector("[name=details]");
  const hint = document.createElement("p");
  hint.className = "hint split-details";
  details.parentElement.append(hint);

  function update() {
    const used = uses[op.value] || [];
    for (const name of ["other", "name", "description", "details"]) {
      const field = form.querySelector(`[name=${name}]`);
      field.closest("div").classList.toggle("hidden", !used.includes(name));
    }
    const chosen = byCode.get(node.value);
    hint.textContent =
      op.value === "split" && chosen && chosen.details.length
        ? interpolate(
            gettext("Details of %(code)s: %(details)s"),
            { code: chosen.code, details: chosen.details.join(" · ") },
            true,
          )
        : "";
  }
  op.addEventListener("change", update);
  node.addEventListener("change", update);
  update();
})();
