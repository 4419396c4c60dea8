// The background service worker. Chrome only delivers an event that wakes the worker to
// listeners registered synchronously during the first evaluation, and a module worker
// may not use top-level await or import(); so this file statically imports the Rust
// glue, starts instantiating it, and registers every listener at once. Each listener
// waits for `ready` and hands the event to Rust, where all the logic lives.
import init, * as redline from "./pkg/worker.js";

const ready = init({ module_or_path: new URL("./pkg/worker_bg.wasm", import.meta.url) });
// Whether `ready` has settled: a listener that needs the event's user gesture calls Rust
// at once when it has, since the gesture does not outlive the listener's turn.
let loaded = false;
ready.then(() => (loaded = true), () => {});

// First of all, a token an earlier version left in `storage.local` is moved out of
// content scripts' reach (see `on_start`).
ready.then(() => redline.on_start()).catch(console.error);

// Rust answers every message (`on_message` never throws); if the module failed to load,
// the answer is empty, which the sender reads as `WorkerError::NoAnswer`.
chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  ready
    .then(() => redline.on_message(message, sender))
    .then(sendResponse, (error) => {
      console.error(error);
      sendResponse();
    });
  return true; // the response is sent asynchronously
});

chrome.action.onClicked.addListener((tab) => {
  ready.then(() => redline.on_action_clicked(tab)).catch(console.error);
});

chrome.commands.onCommand.addListener((command, tab) => {
  ready.then(() => redline.on_command(command, tab)).catch(console.error);
});

// The outbox: deliver what is due whenever the worker starts (it may have been stopped
// with items waiting), at browser start (alarms may not survive a restart), when the
// retry alarm fires, and when a sign-in is saved (a new token may fix what failed).
ready.then(() => redline.deliver_outbox()).catch(console.error);

chrome.runtime.onStartup.addListener(() => {
  ready.then(() => redline.deliver_outbox()).catch(console.error);
});

chrome.alarms.onAlarm.addListener((alarm) => {
  ready.then(() => redline.on_alarm(alarm)).catch(console.error);
});

chrome.storage.onChanged.addListener((changes, area) => {
  ready.then(() => redline.on_storage_changed(changes, area)).catch(console.error);
});

// The toolbar badge (questions waiting for the person's answer): counted at start and
// on its own repeating alarm, so it stays right while the side panel is closed.
ready.then(() => redline.start_badge()).catch(console.error);

chrome.alarms.onAlarm.addListener((alarm) => {
  ready.then(() => redline.on_badge_alarm(alarm)).catch(console.error);
});

// A click on one of its notifications (shown by the badge's poll) opens the side panel
// on the item, which Chrome allows only inside the click's gesture.
chrome.notifications.onClicked.addListener((id) => {
  if (loaded) redline.on_notification_clicked(id);
  else ready.then(() => redline.on_notification_clicked(id)).catch(console.error);
});
