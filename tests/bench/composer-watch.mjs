// What the overlay notes for the composer benchmarks (`instant.mjs` in Chromium,
// `firefox.mjs` in Firefox beside it), run in the overlay's document: when the lasso is
// released (`benchReleasedAt`), the frame after the composer dialog is in the DOM with
// its text box focused (`benchOpenAt`), and the frame after its chips are in it
// (`benchCapturedAt`), all `performance.now()`.
export function watchComposer() {
  addEventListener("pointerup", () => { window.benchReleasedAt ??= performance.now(); }, true);
  const open = () => {
    const dialog = document.querySelector('[role="dialog"]');
    if (window.benchReleasedAt === undefined || !dialog?.contains(document.activeElement)) return;
    requestAnimationFrame(() => { window.benchOpenAt ??= performance.now(); });
    if (dialog.querySelector('[aria-label="Circled elements"]')) {
      requestAnimationFrame(() => { window.benchCapturedAt ??= performance.now(); });
    }
  };
  new MutationObserver(open).observe(document.body, { subtree: true, childList: true });
  addEventListener("focusin", open, true);
}
