// The member pages' service worker, served at /c/{campus}/sw.js for that campus's pages:
// today's badge and the door scanner open offline as they were last seen (network first,
// the kept copy when there is no network); static files come from the cache once fetched;
// a push shows the reminder, and a click on it opens today's survey. Signing out forgets
// every kept page.
'use strict';
var CACHE = 'attest-pages-v1';
var scope = new URL(self.registration.scope).pathname;

self.addEventListener('install', function () { self.skipWaiting(); });
self.addEventListener('activate', function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener('message', function (event) {
  if (event.data === 'signed-out') event.waitUntil(caches.delete(CACHE));
});

self.addEventListener('fetch', function (event) {
  var request = event.request;
  if (request.method !== 'GET') return;
  var url = new URL(request.url);
  if (url.origin !== self.location.origin) return;
  if (url.pathname.indexOf('/static/') === 0) {
    event.respondWith(caches.open(CACHE).then(function (cache) {
      return cache.match(request).then(function (hit) {
        return hit || fetch(request).then(function (response) {
          if (response.ok) cache.put(request, response.clone());
          return response;
        });
      });
    }));
    return;
  }
  var page = url.pathname.slice(scope.length);
  if (request.mode !== 'navigate' || url.pathname.indexOf(scope) !== 0 || (page !== 'badge' && page !== 'scan')) return;
  event.respondWith(fetch(request).then(function (response) {
    if (response.ok && !response.redirected) {
      var copy = response.clone();
      caches.open(CACHE).then(function (cache) { cache.put(url.pathname, copy); });
    }
    return response;
  }).catch(function () {
    return caches.match(url.pathname).then(function (hit) { return hit || Response.error(); });
  }));
});

self.addEventListener('push', function (event) {
  var data = {};
  try { data = event.data ? event.data.json() : {}; } catch (e) { data = { body: event.data ? event.data.text() : '' }; }
  event.waitUntil(self.registration.showNotification(data.title || 'Campus Attest', {
    body: data.body || '', tag: data.tag || 'attest', lang: data.lang || '',
    data: { url: data.url || self.registration.scope }
  }));
});

self.addEventListener('notificationclick', function (event) {
  event.notification.close();
  var target = (event.notification.data && event.notification.data.url) || self.registration.scope;
  event.waitUntil(self.clients.matchAll({ type: 'window', includeUncontrolled: true }).then(function (open) {
    for (var i = 0; i < open.length; i++) {
      if (open[i].url === target && 'focus' in open[i]) return open[i].focus();
    }
    return self.clients.openWindow(target);
  }));
});
