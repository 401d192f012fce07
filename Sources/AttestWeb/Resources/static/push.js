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
  button.addEventListener('click', function () {
    say('working');
    Notification.requestPermission().then(function (permission) {
      if (permission !== 'granted') throw new Error('denied');
      return Promise.all([fetch(base + 'settings/push-key', { credentials: 'same-origin' }).then(function (r) { return r.json(); }),
        navigator.serviceWorker.ready]);
    }).then(function (both) {
      return both[1].pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: bytes(both[0].publicKey) });
    }).then(function (subscription) {
      return fetch(base + 'settings/push', {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
        body: JSON.stringify(subscription.toJSON())
      });
    }).then(function (response) {
      if (!response.ok) throw new Error('refused');
      var box = document.getElementById('channel-push');
      if (box) box.checked = true;
      say('done');
    }).catch(function (error) {
      say(error && error.message === 'denied' ? 'denied' : 'failed');
    });
  });
})();
