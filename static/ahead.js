// Registered for the stages the person enabled (the overlay's "Keep Redline ready on this
// stage"), run once a page of one has loaded and just before `content.js`: tells it to
// put the overlay in the page hidden, with no pen, no focus and no screenshot, so that a
// gesture there only has to show it (a frame of the extension takes Chrome about 90 ms
// to make, longer than a person waits for what they clicked).
globalThis.redlineMountAhead = true;
