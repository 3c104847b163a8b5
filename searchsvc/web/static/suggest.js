// Suggestions as you type: the search box becomes an ARIA 1.2 combobox (list autocomplete).
// Progressive enhancement only: without this file the box is a plain search field and the
// form submits as typed. The suggestions come from GET /api/suggest (data-suggest-url), sent the
// form's filters.
"use strict";

document.addEventListener("DOMContentLoaded", () => {
  const input = document.querySelector("input[data-suggest-url]");
  if (!input || !input.form) return;
  const DEBOUNCE_MS = 100; // one request per pause in typing, not one per key
  const url = input.dataset.suggestUrl;

  const listbox = document.createElement("ul");
  listbox.id = `${input.id}-suggestions`;
  listbox.className = "suggestions";
  listbox.setAttribute("role", "listbox");
  listbox.setAttribute("aria-label", "Suggestions");
  listbox.hidden = true;
  const status = document.createElement("div");
  status.className = "visually-hidden";
  status.setAttribute("role", "status"); // polite: announced once the typing pauses
  input.closest(".search-row").after(listbox, status);

  input.setAttribute("role", "combobox");
  input.setAttribute("aria-autocomplete", "list");
  input.setAttribute("aria-controls", listbox.id);
  input.setAttribute("aria-expanded", "false");

  let active = -1;
  let timer = 0;
  let pending = null;

  const options = () => [...listbox.querySelectorAll("[role=option]")];

  function close() {
    listbox.hidden = true;
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    active = -1;
    status.textContent = ""; // so the next list's count is announced even if it is the same
  }

  function activate(index) {
    const all = options();
    if (all.length === 0) return;
    active = (index + all.length) % all.length;
    all.forEach((option, i) => option.setAttribute("aria-selected", String(i === active)));
    input.setAttribute("aria-activedescendant", all[active].id);
    all[active].scrollIntoView({ block: "nearest" });
  }

  function choose(option) {
    input.value = option.dataset.text;
    close();
    input.form.requestSubmit();
  }

  function show(suggestions) {
    listbox.replaceChildren();
    suggestions.forEach((suggestion, i) => {
      const option = document.createElement("li");
      option.id = `${listbox.id}-${i}`;
      option.setAttribute("role", "option");
      option.setAttribute("aria-selected", "false");
      option.dataset.text = suggestion.text;
      const value = document.createElement("span");
      value.className = "suggestion-value";
      value.textContent = suggestion.value; // text, never markup: names come from the records
      const kind = document.createElement("span");
      kind.className = "suggestion-kind";
      const papers = `${suggestion.papers} ${suggestion.papers === 1 ? "paper" : "papers"}`;
      kind.textContent = suggestion.kind === "author" ? `author, ${papers}` : papers;
      option.append(value, " ", kind);
      option.addEventListener("mousedown", (event) => event.preventDefault()); // keep the focus in the box
      option.addEventListener("click", () => choose(option));
      listbox.append(option);
    });
    active = -1;
    input.removeAttribute("aria-activedescendant");
    const count = suggestions.length;
    listbox.hidden = count === 0;
    input.setAttribute("aria-expanded", String(count > 0));
    status.textContent = count === 0 ? "" : `${count} ${count === 1 ? "suggestion" : "suggestions"}`;
  }

  async function fetchSuggestions(q) {
    if (pending) pending.abort(); // a slower answer to an older prefix must not win
    pending = new AbortController();
    try {
      // The whole form: its filters narrow the suggestions as they narrow the search.
      const params = new URLSearchParams(new FormData(input.form));
      params.set("q", q);
      const response = await fetch(`${url}?${params}`, { signal: pending.signal });
      if (!response.ok) return close(); // e.g. a query too long: the search itself says why
      const answer = await response.json();
      if (answer.q === input.value) show(answer.suggestions);
    } catch (error) {
      if (error.name !== "AbortError") close();
    }
  }

  input.addEventListener("input", () => {
    clearTimeout(timer);
    if (input.value.trim() === "") {
      if (pending) pending.abort();
      return close();
    }
    timer = setTimeout(() => fetchSuggestions(input.value), DEBOUNCE_MS);
  });

  input.addEventListener("keydown", (event) => {
    const open = !listbox.hidden;
    if (event.key === "ArrowDown" && open) {
      event.preventDefault();
      activate(active + 1);
    } else if (event.key === "ArrowUp" && open) {
      event.preventDefault();
      activate(active - 1);
    } else if (event.key === "Enter" && open && active >= 0) {
      event.preventDefault();
      choose(options()[active]);
    } else if (event.key === "Escape" && open) {
      event.preventDefault(); // closes the list only; a second Escape clears the box as usual
      close();
    }
  });

  input.addEventListener("blur", close);
});
