// A keyboard shortcut pressed before its button is drawn is kept, not lost: Streamlit binds a button's `shortcut`
// only once the button is on the page, so Alt+A pressed while a page is still loading (or reconnecting, when every
// button is disabled) would otherwise vanish. ui/serve.py adds this script to every page.
// A press with Ctrl, Cmd or Alt that no enabled button on the page answers is kept until a button with that shortcut
// is drawn and enabled (then clicked once), or until the first script run that starts after the press has finished
// without drawing one, or for 30 s at most, and never across a change of page.
(() => {
  "use strict";
  const KEEP_MS = 30000;
  const READY = '[data-testid="stApp"]';
  const pending = [];

  // Tokens as Streamlit writes them in a button's "Shortcut Alt + A" label; Ctrl and Cmd both read as "mod".
  const token = (text) => {
    const t = text.trim().toLowerCase();
    return { "⌘": "mod", cmd: "mod", ctrl: "mod", "⌥": "alt", esc: "escape" }[t] || t;
  };
  const pressed = (event) => {
    if (!(event.altKey || event.ctrlKey || event.metaKey)) return null;
    const letter = /^(?:Key([A-Z])|Digit([0-9]))$/.exec(event.code || "");
    const base = letter ? (letter[1] || letter[2]).toLowerCase() : (event.key || "").toLowerCase();
    if (!base || ["alt", "control", "meta", "shift"].includes(base)) return null;
    const parts = [event.ctrlKey || event.metaKey ? "mod" : "", event.altKey ? "alt" : "", event.shiftKey ? "shift" : "", base];
    return parts.filter(Boolean).sort().join("+");
  };
  const drawn = (combo) => {
    for (const hint of document.querySelectorAll('button [aria-label^="Shortcut "]')) {
      const keys = hint.getAttribute("aria-label").slice("Shortcut ".length).split(" + ").map(token).sort().join("+");
      const button = hint.closest("button");
      if (keys === combo && button && !button.disabled) return button;
    }
    return null;
  };
  const state = () => document.querySelector(READY)?.getAttribute("data-test-script-state") || "";

  window.addEventListener("keydown", (event) => {
    const combo = pressed(event);
    if (combo && !drawn(combo)) pending.push({ combo, at: Date.now(), path: location.pathname, ran: false });
  }, true);

  const flush = () => {
    const running = state() !== "notRunning";
    for (let i = pending.length - 1; i >= 0; i -= 1) {
      const entry = pending[i];
      const button = drawn(entry.combo);
      const finished = entry.ran && !running;
      entry.ran = entry.ran || running;
      if (button || finished || Date.now() - entry.at > KEEP_MS || location.pathname !== entry.path) {
        pending.splice(i, 1);
        if (button) button.click();
      }
    }
  };
  const start = () => {
    new MutationObserver(() => pending.length && flush()).observe(document.documentElement, {
      subtree: true, childList: true, attributes: true, attributeFilter: ["disabled", "data-test-script-state"],
    });
    setInterval(() => pending.length && flush(), 500);
  };
  if (document.documentElement) start(); else document.addEventListener("DOMContentLoaded", start);
})();
