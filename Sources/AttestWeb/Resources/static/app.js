// Every page under /c/{campus}/: registers the member pages' service worker (sw.js, its scope
// the campus's pages), and on sign-out tells it to forget the pages it kept for offline use.
(function () {
  'use strict';
  if (!('serviceWorker' in navigator)) return;
  var link = document.querySelector('link[rel="manifest"]');
  if (!link) return;
  var base = link.getAttribute('href').replace(/manifest\.webmanifest$/, '');
  navigator.serviceWorker.register(base + 'sw.js', { scope: base }).catch(function () { /* pages work without it */ });
  document.addEventListener('submit', function (event) {
    var action = event.target.getAttribute('action') || '';
    if (/signout$/.test(action) && navigator.serviceWorker.controller) {
      navigator.serviceWorker.controller.postMessage('signed-out');
    }
  });
})();
