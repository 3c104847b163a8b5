// Progressive enhancement only: every page works without this file.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const query = document.getElementById("q");

  // "/" jumps to the search box, as on most search sites (not while typing elsewhere).
  document.addEventListener("keydown", (event) => {
    const typing = event.target.closest("input, textarea, select, [contenteditable]");
    if (event.key === "/" && query && !typing && !event.ctrlKey && !event.metaKey && !event.altKey) {
      event.preventDefault();
      query.focus();
      query.select();
    }
  });

  // Choosing a sort order searches again at once; without script the Search button does it.
  const sort = document.getElementById("sort");
  if (sort && sort.form) {
    sort.addEventListener("change", () => sort.form.requestSubmit());
  }

  // "Copy" buttons copy the text of the element they name.
  for (const button of document.querySelectorAll("button[data-copy]")) {
    const source = document.getElementById(button.dataset.copy);
    const status = button.parentElement.querySelector(".copy-status");
    if (!source) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      const text = source.textContent;
      try {
        await navigator.clipboard.writeText(text);
      } catch {
        // No clipboard API (plain http outside localhost): select it for the user to copy.
        const range = document.createRange();
        range.selectNodeContents(source);
        const selection = window.getSelection();
        selection.removeAllRanges();
        selection.addRange(range);
        if (status) status.textContent = "Selected: press Ctrl+C to copy.";
        return;
      }
      if (status) status.textContent = "Copied.";
    });
  }
});
