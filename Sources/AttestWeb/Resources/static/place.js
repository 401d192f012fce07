// Episodes: "Add my approximate location" asks the browser for it and keeps it to a tenth of
// a degree (about 11 km) in the start form's hidden fields, for the weather where it began.
(function () {
  var box = document.querySelector('.place');
  var lat = document.getElementById('episode-lat'), lon = document.getElementById('episode-lon');
  if (!box || !lat || !lon || !navigator.geolocation) return;
  var check = document.getElementById('episode-place'), status = box.querySelector('.place-status');
  box.hidden = false;
  check.checked = lat.value !== '';
  check.addEventListener('change', function () {
    lat.value = '';
    lon.value = '';
    status.textContent = '';
    if (!check.checked) return;
    status.textContent = box.dataset.asking;
    navigator.geolocation.getCurrentPosition(function (position) {
      lat.value = position.coords.latitude.toFixed(1);
      lon.value = position.coords.longitude.toFixed(1);
      status.textContent = box.dataset.added;
    }, function () {
      check.checked = false;
      status.textContent = box.dataset.failed;
    }, { maximumAge: 600000, timeout: 10000 });
  });
})();
