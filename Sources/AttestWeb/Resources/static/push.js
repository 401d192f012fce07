// Settings: "Get reminders on this browser". Where the browser has the Push API, asks for
// permission, subscribes with the campus's VAPID key, and hands the subscription to the
// server (it keeps it sealed); push is then on for the member.
(function () {
  'use strict';
  var button = document.getElementById('push-subscribe');
  var status = document.getElementById('push-status');
  if (!button || !('serviceWorker' in navigator) || !('PushManager' in window) || !('Notification' in window)) return;
  var base = button.getAttribute('data-base');
  var csrf = button.getAttribute('data-csrf');
  var say = function (name) { status.textContent = button.getAttribute('data-t-' + name) || ''; };
  button.hidden = false;
  function bytes(text) {
    var base64 = text.replace(/-/g, '+').replace(/_/g, '/');
    while (base64.length % 4) base64 += '=';
    var raw = atob(base64), out = new Uint8Array(raw.length);
    for (var i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }
  function same(buffer, key) {
    if (!buffer) return false;
    var held = new Uint8Array(buffer);
    if (held.length !== key.length) return false;
    for (var i = 0; i < held.length; i++) if (held[i] !== key[i]) return false;
    return true;
  }
  // Subscribes with the campus's key now and hands the subscription over, saying which key it
  // was made with. A subscription this browser holds with another key (the campus renewed its
  // key: `attest push keys new`) is dropped first, since the browser refuses a second; a key
  // renewed between the two requests (409) is fetched and subscribed with once more.
  function subscribe(again) {
    return Promise.all([fetch(base + 'settings/push-key', { credentials: 'same-origin' }).then(function (r) { return r.json(); }),
      navigator.serviceWorker.ready]).then(function (both) {
      var text = both[0].publicKey, key = bytes(text), manager = both[1].pushManager;
      return manager.getSubscription().then(function (held) {
        if (held && !same(held.options && held.options.applicationServerKey, key)) return held.unsubscribe();
      }).then(function () {
        return manager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
      }).then(function (subscription) {
        var sent = subscription.toJSON();
        sent.applicationServerKey = text;
        return fetch(base + 'settings/push', {
          method: 'POST', credentials: 'same-origin',
          headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
          body: JSON.stringify(sent)
        });
      });
    }).then(function (response) {
      if (response.status === 409 && !again) return subscribe(true);
      if (!response.ok) throw new Error('refused');
    });
  }
  button.addEventListener('click', function () {
    say('working');
    Notification.requestPermission().then(function (permission) {
      if (permission !== 'granted') throw new Error('denied');
      return subscribe(false);
    }).then(function () {
      var box = document.getElementById('channel-push');
      if (box) box.checked = true;
      say('done');
    }).catch(function (error) {
      say(error && error.message === 'denied' ? 'denied' : 'failed');
    });
  });
})();
