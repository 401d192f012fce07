// Testing locations: "Use my location" asks the browser, then reloads with lat and lon.
(function () {
  var button = document.getElementById('use-location');
  if (!button || !navigator.geolocation) return;
  button.hidden = false;
  button.addEventListener('click', function () {
    navigator.geolocation.getCurrentPosition(function (position) {
      var url = new URL(window.location.href);
      url.searchParams.set('lat', position.coords.latitude.toFixed(4));
      url.searchParams.set('lon', position.coords.longitude.toFixed(4));
      window.location.assign(url.toString());
    });
  });
})();
