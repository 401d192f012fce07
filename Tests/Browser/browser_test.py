#!/usr/bin/env python3
"""Campus Attest's web pages in a real browser: Debian's Chromium driven by selenium.

Run by the Swift test BrowserTests, which starts the server, the test identity provider and
the campus, and passes their addresses and a few badge tokens in a JSON file:

    python3 Tests/Browser/browser_test.py CONFIG.json

Every page is checked with axe-core (no serious or critical violation) and photographed, in
English and Spanish, under the config's screenshots directory.
"""
import base64
import datetime
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import zlib
import urllib.request

from axe_selenium_python import Axe
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from PIL import Image
import qrcode
from pyzbar import pyzbar
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

CONFIG = {}
AXE_REPORT = []


def make_driver(javascript=True, media=False, camera=None, languages='en-US,en'):
    options = webdriver.ChromeOptions()
    options.binary_location = '/usr/bin/chromium'
    for argument in ('--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--window-size=1100,1400',
                     '--lang=en-US', '--disable-extensions', '--no-first-run'):
        options.add_argument(argument)
    if media:
        # A made-up microphone (a tone) that needs no permission prompt, for MediaRecorder.
        options.add_argument('--use-fake-ui-for-media-stream')
        options.add_argument('--use-fake-device-for-media-stream')
    if camera:
        # A camera that films `camera` (a Y4M video) and needs no permission prompt.
        options.add_argument('--use-fake-ui-for-media-stream')
        options.add_argument('--use-fake-device-for-media-stream')
        options.add_argument('--use-file-for-fake-video-capture=' + camera)
    prefs = {'intl.accept_languages': languages}
    if not javascript:
        prefs['profile.managed_default_content_settings.javascript'] = 2
    options.add_experimental_option('prefs', prefs)
    driver = webdriver.Chrome(service=Service(executable_path='/usr/bin/chromedriver'), options=options)
    driver.set_page_load_timeout(30)
    # As Safari on iPhone, Firefox and Chrome on Linux: no BarcodeDetector, so the door
    # scanner's server path is what reads codes (headless Chromium on Linux has none either).
    driver.execute_cdp_cmd('Page.addScriptToEvaluateOnNewDocument', {'source': 'delete window.BarcodeDetector;'})
    return driver


def url(path, campus=None):
    return CONFIG['base'] + '/c/' + (campus or CONFIG['campus']) + path


def wait_for(driver, condition, seconds=10):
    # A form's submit replaces the page: an element found just before that goes stale while
    # its text is read, which is no answer yet, so the wait goes on. Chromium may say so as a
    # stale element or, when the read lands mid-navigation, as an inspector error ("Node with
    # given id does not belong to the document"): the same, so the wait goes on for both.
    return WebDriverWait(driver, seconds, ignored_exceptions=[NoSuchElementException, StaleElementReferenceException,
                                                              WebDriverException]).until(condition)


def b64url(text):
    return base64.urlsafe_b64decode(text + '=' * (-len(text) % 4))


def sign_in(driver, email, path='/', campus=None):
    """The whole redirect flow: the campus page, its sign-in page, the provider, and back."""
    driver.get(url(path, campus))
    wait_for(driver, lambda d: '/signin' in d.current_url)
    driver.find_element(By.PARTIAL_LINK_TEXT, 'Test IdP').click()
    wait_for(driver, lambda d: d.find_elements(By.ID, 'login_hint'))
    driver.find_element(By.ID, 'login_hint').send_keys(email)
    driver.find_element(By.ID, 'continue').click()
    wait_for(driver, lambda d: d.current_url.startswith(CONFIG['base'] + '/c/') and '/signin' not in d.current_url)


def check_page(driver, name):
    """axe-core on the page (no serious or critical violation), then a full-page screenshot."""
    axe = Axe(driver)
    axe.inject()
    results = axe.run()
    serious = [v for v in results['violations'] if v.get('impact') in ('serious', 'critical')]
    AXE_REPORT.append((name, len(results['violations']), len(serious)))
    assert not serious, '%s: %s' % (name, json.dumps([(v['id'], v['help'], [n['target'] for n in v['nodes']][:3]) for v in serious], indent=1))
    height = driver.execute_script('return Math.max(document.body.scrollHeight, 800)')
    driver.set_window_size(1100, min(height + 120, 6000))
    driver.save_screenshot(os.path.join(CONFIG['screenshots'], name + '.png'))
    driver.set_window_size(1100, 1400)


def check_both_languages(driver, name):
    """The page in English, then in Spanish through the picker, then back to English."""
    check_page(driver, name + '-en')
    driver.find_element(By.CSS_SELECTOR, 'a[hreflang="es"]').click()
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, 'html').get_attribute('lang') == 'es')
    check_page(driver, name + '-es')
    driver.find_element(By.CSS_SELECTOR, 'a[hreflang="en"]').click()
    wait_for(driver, lambda d: d.find_element(By.TAG_NAME, 'html').get_attribute('lang') == 'en')


def answer_survey(driver, fever='no'):
    driver.find_element(By.CSS_SELECTOR, 'input[name="answers.fever"][value="%s"]' % fever).click()
    driver.find_element(By.CSS_SELECTOR, 'input[name="answers.cough"][value="no"]').click()
    driver.find_element(By.ID, 'q-temperature').send_keys('36.7')
    driver.find_element(By.CSS_SELECTOR, 'input[name="answers.where_today"][value="on_campus"]').click()
    driver.find_element(By.CSS_SELECTOR, 'main button[type="submit"]').click()


def api(path, token=None, body=None):
    request = urllib.request.Request(CONFIG['base'] + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={'Content-Type': 'application/json', **({'Authorization': 'Bearer ' + token} if token else {})})
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def verify_with_jwks(token):
    """Checks an ES256 badge token against the campus's published keys, as a door scanner would."""
    header, payload, signature = token.split('.')
    keys = api('/v1/campuses/%s/badge-keys' % CONFIG['campus'])['keys']
    kid = json.loads(b64url(header))['kid']
    jwk = next(key for key in keys if key['kid'] == kid)
    public = ec.EllipticCurvePublicNumbers(int.from_bytes(b64url(jwk['x']), 'big'), int.from_bytes(b64url(jwk['y']), 'big'), ec.SECP256R1()).public_key()
    raw = b64url(signature)
    der = encode_dss_signature(int.from_bytes(raw[:32], 'big'), int.from_bytes(raw[32:], 'big'))
    public.verify(der, (header + '.' + payload).encode(), ec.ECDSA(hashes.SHA256()))
    return json.loads(b64url(payload))


class MemberPages(unittest.TestCase):
    """A member signs in through the identity provider, answers, and shows the badge."""

    @classmethod
    def setUpClass(cls):
        cls.driver = make_driver()

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()

    def test_1_invalid_answer_then_badge_then_already_submitted(self):
        d = self.driver
        sign_in(d, CONFIG['member'])
        self.assertIn('Daily check', d.find_element(By.TAG_NAME, 'h1').text)
        check_both_languages(d, 'survey')
        # An invalid answer: the form comes back with the message by its field and focus there.
        d.find_element(By.CSS_SELECTOR, 'input[name="answers.cough"][value="no"]').click()
        d.find_element(By.ID, 'q-temperature').send_keys('98.6')
        d.find_element(By.CSS_SELECTOR, 'main button[type="submit"]').click()
        wait_for(d, lambda d: d.find_elements(By.CLASS_NAME, 'error-summary'))
        self.assertEqual(d.switch_to.active_element.get_attribute('id'), 'q-fever')
        summary = d.find_element(By.CLASS_NAME, 'error-summary').text
        self.assertIn('Choose yes or no', summary)
        self.assertIn('Enter a valid number', summary)
        self.assertEqual(d.find_element(By.ID, 'q-temperature').get_attribute('aria-describedby'), 'q-temperature-hint q-temperature-error')
        check_page(d, 'survey-errors-en')
        d.find_element(By.ID, 'q-temperature').clear()
        answer_survey(d)
        wait_for(d, lambda d: d.current_url.endswith('/badge'))
        badge = d.find_element(By.CSS_SELECTOR, 'section.badge')
        self.assertIn('green', badge.get_attribute('class'))
        self.assertIn('green', badge.text.lower())
        # The clock ticks: a screenshot would not.
        first = d.find_element(By.ID, 'clock').text
        time.sleep(1.3)
        self.assertNotEqual(first, d.find_element(By.ID, 'clock').text)
        self.assertRegex(d.find_element(By.ID, 'countdown').text, r'^\d+:\d\d:\d\d$')
        # The QR code, read back from a screenshot, is a badge token the campus's keys verify.
        qr = d.find_element(By.CSS_SELECTOR, 'svg.qr')
        image = Image.open(io.BytesIO(qr.screenshot_as_png)).convert('L')
        image = image.resize((image.width * 2, image.height * 2), Image.NEAREST)
        codes = pyzbar.decode(image)
        self.assertEqual(len(codes), 1, 'one QR code in the screenshot')
        claims = verify_with_jwks(codes[0].data.decode())
        self.assertEqual(claims['campus'], CONFIG['campus'])
        self.assertEqual(claims['color'], 'green')
        check_both_languages(d, 'badge')
        # Already submitted: today's page is the badge.
        d.get(url('/'))
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, 'section.badge.green'))

    def test_2_history_locations_stats(self):
        d = self.driver
        d.get(url('/history'))
        rows = d.find_elements(By.CSS_SELECTOR, 'main tbody tr')
        self.assertEqual(len(rows), 1)
        self.assertIn('Green', rows[0].text)
        check_both_languages(d, 'history')
        d.get(url('/locations'))
        names = [e.text for e in d.find_elements(By.CSS_SELECTOR, '.locations h2')]
        self.assertEqual(names, ['Field House', 'Student Health Center'])
        self.assertTrue(d.find_elements(By.PARTIAL_LINK_TEXT, 'Map'))
        check_both_languages(d, 'locations')
        d.get(url('/locations?lat=40.87&lon=-73.91'))
        self.assertIn('km', d.find_element(By.CSS_SELECTOR, '.locations li').text)
        d.get(url('/stats'))
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, 'svg.chart title'))
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, 'main table caption'))
        # The campus's region beside its own figures: the trend as a chart and a table.
        region = d.find_element(By.CSS_SELECTOR, 'section[aria-labelledby="community-heading"]')
        self.assertIn('New cases in Alpha, Testland', region.text)
        self.assertIn('Risk: high. Trend: rising.', region.text)
        self.assertTrue(region.find_elements(By.CSS_SELECTOR, 'svg.chart polyline'))
        self.assertEqual(len(region.find_elements(By.CSS_SELECTOR, 'tbody tr')), 14)
        check_both_languages(d, 'stats')
        d.get(url('/'))
        line = d.find_element(By.CSS_SELECTOR, 'main p.community').text
        self.assertTrue(line.startswith('Community risk in Alpha, Testland: high, rising'), line)
        self.assertIn('Wear a mask indoors.', line)

    def test_3_refused_the_admin_pages(self):
        d = self.driver
        d.get(url('/admin'))
        self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, 'Not allowed')
        self.assertIn('needs the role admin', d.find_element(By.TAG_NAME, 'main').text)
        check_page(d, 'forbidden-en')

    def test_4_sign_out(self):
        d = self.driver
        d.get(url('/history'))
        d.find_element(By.CSS_SELECTOR, 'header form button').click()
        wait_for(d, lambda d: '/signin' in d.current_url)
        check_both_languages(d, 'signin')
        d.get(url('/history'))
        wait_for(d, lambda d: '/signin' in d.current_url)


class WithoutJavaScript(unittest.TestCase):
    """The member flow with JavaScript off: plain links, redirects and form posts."""

    def test_sign_in_answer_and_badge(self):
        d = make_driver(javascript=False)
        try:
            sign_in(d, CONFIG['noScriptMember'])
            answer_survey(d, fever='yes')
            wait_for(d, lambda d: d.current_url.endswith('/badge'))
            badge = d.find_element(By.CSS_SELECTOR, 'section.badge')
            self.assertNotIn('green', badge.get_attribute('class'))
            self.assertTrue(d.find_elements(By.CSS_SELECTOR, 'svg.qr'))
            # The countdown shows the server's figure when no script ticks it, and with scripts
            # off nothing ticks: the clock and the countdown read the same two seconds later.
            countdown, clock = d.find_element(By.ID, 'countdown').text, d.find_element(By.ID, 'clock').text
            self.assertRegex(countdown, r'^\d+:\d\d:\d\d$')
            time.sleep(2.2)
            self.assertEqual((d.find_element(By.ID, 'countdown').text, d.find_element(By.ID, 'clock').text), (countdown, clock))
        finally:
            d.quit()


def write_file(name, data):
    path = os.path.join(CONFIG['screenshots'], name)
    with open(path, 'wb') as handle:
        handle.write(data)
    return path


def wav_bytes(seconds=0.3):
    """A real, tiny WAV file (8 kHz, 8-bit, silence)."""
    frames = int(8000 * seconds)
    header = b'RIFF' + (36 + frames).to_bytes(4, 'little') + b'WAVEfmt ' + (16).to_bytes(4, 'little') + (1).to_bytes(2, 'little')
    header += (1).to_bytes(2, 'little') + (8000).to_bytes(4, 'little') + (8000).to_bytes(4, 'little') + (1).to_bytes(2, 'little') + (8).to_bytes(2, 'little')
    return header + b'data' + frames.to_bytes(4, 'little') + bytes([128]) * frames


def fetch_in_page(driver, path):
    """What the page's own session gets for path: status, type and the first bytes."""
    return driver.execute_async_script("""
        var done = arguments[arguments.length - 1];
        fetch(arguments[0]).then(function (r) { return r.arrayBuffer().then(function (b) {
            done([r.status, r.headers.get('content-type'), Array.from(new Uint8Array(b).slice(0, 16)), new TextDecoder().decode(b)]); }); });
        """, path)


class JournalAndEpisodes(unittest.TestCase):
    """A member writes an entry with a recording from the microphone, tracks an episode where
    the weather is known, exports and shares; every page checked with axe in both languages."""

    @classmethod
    def setUpClass(cls):
        cls.driver = make_driver(media=True)
        d = cls.driver
        d.execute_cdp_cmd('Browser.grantPermissions', {'origin': CONFIG['base'], 'permissions': ['geolocation']})
        d.execute_cdp_cmd('Emulation.setGeolocationOverride', {'latitude': 40.7536, 'longitude': -73.9832, 'accuracy': 50})
        sign_in(d, CONFIG['journalMember'], '/journal')

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()

    def test_1_an_entry_with_a_recording(self):
        d = self.driver
        d.get(url('/journal'))
        check_both_languages(d, 'journal')
        # No title: the form comes back with the message by its field, focus there.
        d.find_element(By.ID, 'entry-text').send_keys('Woke up with a sore throat.')
        d.find_element(By.CSS_SELECTOR, '#entry-form button[type="submit"]').click()
        wait_for(d, lambda d: d.find_elements(By.CLASS_NAME, 'error-summary'))
        self.assertEqual(d.switch_to.active_element.get_attribute('id'), 'entry-title')
        self.assertIn('Enter a title', d.find_element(By.CLASS_NAME, 'error-summary').text)
        self.assertEqual(d.find_element(By.ID, 'entry-text').get_attribute('value'), 'Woke up with a sore throat.')
        self.assertTrue(d.title.startswith('Error: '))
        check_page(d, 'journal-errors-en')
        d.find_element(By.ID, 'entry-title').send_keys('Sore throat')
        d.find_element(By.ID, 'entry-tag-symptom').click()
        # Record from the (made-up) microphone: the recording fills the file input.
        button = d.find_element(By.CSS_SELECTOR, '.record-button')
        button.click()
        wait_for(d, lambda d: 'Recording' in d.find_element(By.CSS_SELECTOR, '.record-status').text)
        time.sleep(2.2)
        button.click()
        wait_for(d, lambda d: 'Recorded' in d.find_element(By.CSS_SELECTOR, '.record-status').text)
        self.assertEqual(d.execute_script("return document.getElementById('entry-audio').files.length"), 1)
        self.assertTrue(d.find_element(By.CSS_SELECTOR, '.record-preview').is_displayed())
        d.find_element(By.CSS_SELECTOR, '#entry-form button[type="submit"]').click()
        wait_for(d, lambda d: d.current_url.endswith('?saved=1'))
        self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, 'Sore throat')
        src = d.find_element(By.CSS_SELECTOR, 'article audio').get_attribute('src')
        status, kind, head, _ = fetch_in_page(d, src)
        self.assertEqual((status, kind), (200, 'audio/webm'))
        self.assertEqual(head[:4], [0x1A, 0x45, 0xDF, 0xA3], 'a WebM recording')
        self.assertIn('Recording (WebM', d.find_element(By.TAG_NAME, 'article').text)
        check_both_languages(d, 'entry')
        # A file chosen instead: a renamed text file is refused, a WAV kept.
        d.find_element(By.CSS_SELECTOR, 'details summary').click()
        d.find_element(By.ID, 'entry-audio').send_keys(write_file('not-audio.mp3', b'just text, not a recording'))
        d.find_element(By.CSS_SELECTOR, '#entry-form button[type="submit"]').click()
        wait_for(d, lambda d: d.find_elements(By.CLASS_NAME, 'error-summary'))
        self.assertIn('not a recording the journal keeps', d.find_element(By.CLASS_NAME, 'error-summary').text)
        d.find_element(By.ID, 'entry-audio').send_keys(write_file('voice.wav', wav_bytes()))
        d.find_element(By.CSS_SELECTOR, '#entry-form button[type="submit"]').click()
        wait_for(d, lambda d: d.current_url.endswith('?saved=1'))
        self.assertIn('Recording (WAV', d.find_element(By.TAG_NAME, 'article').text)
        d.get(url('/journal'))
        self.assertIn('Sore throat', d.find_element(By.CSS_SELECTOR, '.entries').text)

    def test_2_an_episode_in_one_tap_with_the_weather(self):
        d = self.driver
        d.get(url('/episodes'))
        place = d.find_element(By.ID, 'episode-place')
        place.click()
        wait_for(d, lambda d: 'Location added' in d.find_element(By.CSS_SELECTOR, '.place-status').text)
        self.assertEqual(d.find_element(By.ID, 'episode-lat').get_attribute('value'), '40.8')
        d.find_element(By.ID, 'episode-start-headache').click()
        wait_for(d, lambda d: d.current_url.endswith('?started=1'))
        self.assertIn('Headache since', d.find_element(By.CSS_SELECTOR, '.open-episode').text)
        check_both_languages(d, 'episodes')
        d.find_element(By.CSS_SELECTOR, 'section[aria-labelledby="list-heading"] tbody a').click()
        wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, 'dl.facts'))
        weather = d.find_element(By.CSS_SELECTOR, 'section.weather table').text
        self.assertIn('21.5 °C', weather)
        self.assertIn('Air quality', weather)
        self.assertIn('42 US AQI', weather)
        self.assertIn('mlat=40.8', d.find_element(By.PARTIAL_LINK_TEXT, 'Map').get_attribute('href'))
        check_both_languages(d, 'episode')
        d.find_element(By.CSS_SELECTOR, 'article .stop-button').click()
        wait_for(d, lambda d: d.current_url.endswith('?stopped=1'))
        self.assertFalse(d.find_elements(By.CSS_SELECTOR, '.open-episode'))
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, 'svg.chart title'))

    def test_3_export_and_a_link_for_a_clinician(self):
        d = self.driver
        d.get(url('/sharing'))
        start = d.find_element(By.ID, 'export-from').get_attribute('value')
        end = d.find_element(By.ID, 'export-to').get_attribute('value')
        status, kind, _, text = fetch_in_page(d, url('/sharing/export?from=%s&to=%s&format=csv' % (start, end)))
        self.assertEqual((status, kind), (200, 'text/csv; charset=utf-8'))
        self.assertIn('Sore throat', text)
        d.find_element(By.CSS_SELECTOR, 'form[action$="sharing/links"] button').click()
        wait_for(d, lambda d: d.find_elements(By.ID, 'new-link-url'))
        link = d.find_element(By.ID, 'new-link-url').get_attribute('value')
        check_page(d, 'sharing-link-en')
        # A clinician: no cookie, no sign-in. The link's page opens nothing by itself (a chat's
        # preview fetching it is no opening); its button posts for the document.
        d.get(link)
        self.assertIn('Shared by', d.find_element(By.TAG_NAME, 'main').text)
        self.assertTrue(d.find_elements(By.CSS_SELECTOR, 'form[method="post"] button[value="pdf"]'))
        check_page(d, 'shared-link-en')
        with urllib.request.urlopen(urllib.request.Request(link, data=b'format=pdf'), timeout=10) as response:
            self.assertEqual(response.read(5), b'%PDF-')
        d.get(url('/sharing'))
        self.assertIn('Opened 1 times', d.find_element(By.TAG_NAME, 'main').text)
        check_both_languages(d, 'sharing')
        d.find_element(By.CSS_SELECTOR, 'form[action$="/revoke"] button').click()
        wait_for(d, lambda d: d.current_url.endswith('?revoked=1'))
        with self.assertRaises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(link, timeout=10)
        self.assertEqual(refused.exception.code, 404)


class JournalWithoutJavaScript(unittest.TestCase):
    """An entry with a chosen file, and an episode started and stopped, with JavaScript off."""

    def test_entry_and_episode(self):
        d = make_driver(javascript=False)
        try:
            sign_in(d, CONFIG['noScriptMember'], '/journal')
            self.assertFalse(d.find_element(By.CSS_SELECTOR, '.recorder').is_displayed(), 'no recorder without script')
            d.find_element(By.ID, 'entry-title').send_keys('Typed without script')
            d.find_element(By.ID, 'entry-audio').send_keys(write_file('plain.wav', wav_bytes()))
            d.find_element(By.CSS_SELECTOR, '#entry-form button[type="submit"]').click()
            wait_for(d, lambda d: d.current_url.endswith('?saved=1'))
            self.assertIn('Recording (WAV', d.find_element(By.TAG_NAME, 'article').text)
            d.get(url('/episodes'))
            self.assertFalse(d.find_element(By.CSS_SELECTOR, '.place').is_displayed(), 'no location without script')
            d.find_element(By.ID, 'episode-start-migraine').click()
            wait_for(d, lambda d: d.current_url.endswith('?started=1'))
            d.find_element(By.CSS_SELECTOR, '.open-episode button').click()
            wait_for(d, lambda d: d.current_url.endswith('?stopped=1'))
            self.assertIn('Migraine', d.find_element(By.CSS_SELECTOR, 'section[aria-labelledby="list-heading"] tbody').text)
        finally:
            d.quit()


class KeyboardOnly(unittest.TestCase):
    """Every step with the keyboard alone: the skip link, the sign-in, the form."""

    def tab_to(self, d, predicate, limit=120):
        for _ in range(limit):
            ActionChains(d).send_keys(Keys.TAB).perform()
            element = d.switch_to.active_element
            if predicate(element):
                return element
        self.fail('no focusable element matched after %d tabs' % limit)

    def test_answer_with_the_keyboard(self):
        d = make_driver()
        try:
            d.get(url('/'))
            wait_for(d, lambda d: '/signin' in d.current_url)
            skip = self.tab_to(d, lambda e: True)
            self.assertEqual(skip.get_attribute('class'), 'skip')
            self.tab_to(d, lambda e: 'Test IdP' in e.text).send_keys(Keys.ENTER)
            wait_for(d, lambda d: d.find_elements(By.ID, 'login_hint'))
            self.tab_to(d, lambda e: e.get_attribute('id') == 'login_hint').send_keys(CONFIG['keyboardMember'] + Keys.ENTER)
            wait_for(d, lambda d: d.find_elements(By.NAME, 'answers.fever'))
            for name in ('answers.fever', 'answers.cough'):
                self.tab_to(d, lambda e, n=name: e.get_attribute('name') == n)
                ActionChains(d).send_keys(Keys.ARROW_RIGHT).perform()  # moves to and selects "No"
            self.tab_to(d, lambda e: e.get_attribute('id') == 'q-temperature').send_keys('37.1')
            self.tab_to(d, lambda e: e.get_attribute('name') == 'answers.where_today')
            ActionChains(d).send_keys(Keys.SPACE).perform()
            self.tab_to(d, lambda e: e.tag_name == 'button' and e.get_attribute('type') == 'submit' and 'answers' in e.text.lower() or e.text == 'Submit my answers').send_keys(Keys.ENTER)
            wait_for(d, lambda d: d.current_url.endswith('/badge'))
            self.assertIn('green', d.find_element(By.CSS_SELECTOR, 'section.badge').get_attribute('class'))
        finally:
            d.quit()


class DoorScanner(unittest.TestCase):
    """A screener checks good, expired, forged and other campuses' badges, online and offline."""

    @classmethod
    def setUpClass(cls):
        cls.driver = make_driver()
        sign_in(cls.driver, CONFIG['screener'], '/scan')

    @classmethod
    def tearDownClass(cls):
        cls.driver.quit()

    def check(self, token):
        d = self.driver
        # The last verdict fills the screen for two seconds; a tap ends it, as door staff would.
        verdict = d.find_element(By.ID, 'verdict')
        if 'full' in verdict.get_attribute('class'):
            verdict.click()
        field = d.find_element(By.ID, 'token')
        field.clear()
        field.send_keys(token)
        d.find_element(By.CSS_SELECTOR, '#paste-form button[type="submit"]').click()
        wait_for(d, lambda d: 'wait' not in d.find_element(By.ID, 'verdict').get_attribute('class'))
        return d.find_element(By.ID, 'verdict')

    def test_verdicts(self):
        d = self.driver
        d.get(url('/scan'))
        wait_for(d, lambda d: d.execute_script("return localStorage.getItem('attest-keys-%s')" % CONFIG['campus']))
        check_both_languages(d, 'scan')
        good = self.check(CONFIG['goodToken'])
        self.assertIn('Genuine', good.text)
        self.assertIn('server', good.text)
        check_page(d, 'scan-verdict-en')
        self.assertIn('expired', self.check(CONFIG['expiredToken']).text)
        self.assertIn('forged', self.check(CONFIG['forgedToken']).text)
        self.assertIn('another campus', self.check(CONFIG['otherCampusToken']).text)
        self.assertIn('not a badge code', self.check('not-a-badge').text)

    def test_offline(self):
        d = self.driver
        d.get(url('/scan'))
        wait_for(d, lambda d: d.execute_script("return localStorage.getItem('attest-keys-%s')" % CONFIG['campus']))
        d.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
        try:
            good = self.check(CONFIG['goodToken'])
            self.assertIn('Genuine', good.text)
            self.assertIn('offline', good.text)
            self.assertIn('forged', self.check(CONFIG['forgedToken']).text)
        finally:
            d.delete_network_conditions()


def qr_image(token, size=480):
    """The badge's QR code as the member's screen shows it, drawn by PyPI qrcode."""
    import qrcode
    code = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_M, border=4)
    code.add_data(token)
    code.make(fit=True)
    return code.make_image(fill_color='black', back_color='white').convert('L').resize((size, size), Image.NEAREST)


def y4m(token, name):
    """A Y4M video (640 × 480, 4:2:0) of the badge held up to the camera, for Chromium's fake camera."""
    frame = Image.new('L', (640, 480), 90)
    frame.paste(qr_image(token, 440), (100, 20))
    luma = frame.tobytes()
    chroma = bytes([128]) * (320 * 240)
    path = os.path.join(CONFIG['screenshots'], name)
    with open(path, 'wb') as f:
        f.write(b'YUV4MPEG2 W640 H480 F10:1 Ip A1:1 C420jpeg\n')
        for _ in range(10):
            f.write(b'FRAME\n' + luma + chroma + chroma)
    return path


class DoorCamera(unittest.TestCase):
    """Where the browser has no BarcodeDetector: the camera's frames, a photo with script and a
    photo without, each read by the server, each verdict the badge's."""

    DOOR = 'North gate (camera test)'

    def camera_verdict(self, token, expected):
        d = make_driver(camera=y4m(token, 'camera.y4m'))
        try:
            sign_in(d, CONFIG['screener'], '/scan')
            # Door mode: each verdict is counted at the door the screener names.
            d.find_element(By.ID, 'door').clear()
            d.find_element(By.ID, 'door').send_keys(self.DOOR)
            button = d.find_element(By.ID, 'start-camera')
            self.assertTrue(button.is_displayed(), 'the camera button shows without BarcodeDetector')
            started = time.monotonic()
            button.click()
            wait_for(d, lambda d: 'wait' not in d.find_element(By.ID, 'verdict').get_attribute('class'), 15)
            took = time.monotonic() - started
            text = d.find_element(By.ID, 'verdict').text
            self.assertIn(expected, text)
            sys.stderr.write('camera: %r in %.2f s\n' % (expected, took))
            self.assertLess(took, 5, 'the verdict took %.1f s' % took)
            # The verdict fills the screen (for two seconds), in its colour and words.
            size = d.find_element(By.ID, 'verdict').size
            window = d.execute_script('return [window.innerWidth, window.innerHeight]')
            self.assertGreaterEqual(size['width'], window[0] - 1)
            self.assertGreaterEqual(size['height'], window[1] - 1)
            return d
        except Exception:
            d.quit()
            raise

    def test_camera_green_red_expired_and_another_campus(self):
        d = self.camera_verdict(CONFIG['goodToken'], 'Genuine')
        try:
            self.assertIn('green', d.find_element(By.ID, 'verdict').get_attribute('class'))
            check_page(d, 'scan-camera-en')
        finally:
            d.quit()
        d = self.camera_verdict(CONFIG['redToken'], 'Genuine')
        try:
            self.assertIn('red', d.find_element(By.ID, 'verdict').get_attribute('class'))
        finally:
            d.quit()
        self.camera_verdict(CONFIG['expiredToken'], 'expired').quit()
        self.camera_verdict(CONFIG['otherCampusToken'], 'another campus').quit()
        # The four verdicts, counted at the door (a server adds its counts every 5 seconds),
        # on the admin's dashboard as in the API: the badges' colours and the refusals, no one's name.
        today = datetime.date.today()
        query = 'from=%s&to=%s' % (today - datetime.timedelta(days=1), today + datetime.timedelta(days=1))
        deadline = time.monotonic() + 20
        while True:
            doors = api('/v1/campuses/%s/admin/doors?%s' % (CONFIG['campus'], query), CONFIG['adminToken'])['doors']
            door = next((item for item in doors if item['door'] == self.DOOR), None)
            if door and door['total']['count'] >= 4 or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.assertIsNotNone(door, 'the door is counted: %r' % doors)
        total = door['total']
        self.assertEqual(total['count'], 4, total)
        self.assertEqual((total['members']['green'], total['members']['red']), (1, 1), total)
        self.assertEqual(sum(total['refused'].values()), 2, total)
        self.assertEqual(total['refused'].get('expired'), 1, total)
        d = make_driver()
        try:
            sign_in(d, CONFIG['admin'], '/admin?' + query)
            row = next(r for r in d.find_elements(By.CSS_SELECTOR, 'table tbody tr')
                       if r.find_elements(By.TAG_NAME, 'th') and r.find_element(By.TAG_NAME, 'th').text == self.DOOR)
            cells = [c.text for c in row.find_elements(By.TAG_NAME, 'td')]
            # Green, yellow, red, not submitted, guests, refused, total.
            self.assertEqual(cells, ['1', '0', '1', '0', '0', '2', '4'])
            check_page(d, 'admin-doors-en')
        finally:
            d.quit()

    def photo(self, token, name):
        path = os.path.join(CONFIG['screenshots'], name)
        frame = Image.new('L', (900, 700), 200)
        frame.paste(qr_image(token, 500), (200, 100))
        frame.save(path, quality=85)
        return path

    def test_photo_of_the_badge_page(self):
        """A screenshot of a member's badge page, as a phone's photo of it would be, read by the server."""
        member = make_driver()
        try:
            sign_in(member, 'walker@example.edu', '/badge')
            wait_for(member, lambda d: d.find_elements(By.CSS_SELECTOR, 'section.badge.green'))
            path = os.path.join(CONFIG['screenshots'], 'badge-page-photo.png')
            member.save_screenshot(path)
        finally:
            member.quit()
        d = make_driver()
        try:
            sign_in(d, CONFIG['screener'], '/scan')
            d.find_element(By.ID, 'image').send_keys(path)
            wait_for(d, lambda d: 'wait' not in d.find_element(By.ID, 'verdict').get_attribute('class'), 15)
            verdict = d.find_element(By.ID, 'verdict')
            self.assertIn('Genuine', verdict.text)
            self.assertIn('green', verdict.get_attribute('class'))
        finally:
            d.quit()

    def test_photo_with_and_without_script(self):
        d = make_driver()
        try:
            sign_in(d, CONFIG['screener'], '/scan')
            d.find_element(By.ID, 'image').send_keys(self.photo(CONFIG['goodToken'], 'badge-photo.jpg'))
            wait_for(d, lambda d: 'wait' not in d.find_element(By.ID, 'verdict').get_attribute('class'), 15)
            self.assertIn('Genuine', d.find_element(By.ID, 'verdict').text)
            d.find_element(By.ID, 'image').send_keys(self.photo('https://example.edu/not-a-badge', 'other-photo.jpg'))
            wait_for(d, lambda d: 'not a badge code' in d.find_element(By.ID, 'verdict').text, 15)
        finally:
            d.quit()
        d = make_driver(javascript=False)
        try:
            sign_in(d, CONFIG['screener'], '/scan')
            d.find_element(By.ID, 'image').send_keys(self.photo(CONFIG['expiredToken'], 'expired-photo.jpg'))
            d.find_element(By.CSS_SELECTOR, '#paste-form button[type="submit"]').click()
            try:
                wait_for(d, lambda d: 'expired' in d.find_element(By.ID, 'verdict').text, 15)
            except Exception:
                raise AssertionError('no verdict without script: %s %s' % (d.current_url, d.find_element(By.TAG_NAME, 'body').text[:600]))
            d.find_element(By.ID, 'image').send_keys(self.photo(CONFIG['goodToken'], 'good-photo.jpg'))
            d.find_element(By.CSS_SELECTOR, '#paste-form button[type="submit"]').click()
            wait_for(d, lambda d: 'Genuine' in d.find_element(By.ID, 'verdict').text, 15)
            d.save_screenshot(os.path.join(CONFIG['screenshots'], 'scan-photo-nojs-en.png'))
        finally:
            d.quit()


def pdf_text(data):
    """A PDF's text, read back by poppler's pdftotext."""
    with tempfile.NamedTemporaryFile(suffix='.pdf') as handle:
        handle.write(data)
        handle.flush()
        return subprocess.run(['/usr/bin/pdftotext', '-layout', handle.name, '-'], capture_output=True, text=True, check=True).stdout


class CommunityAndProfile(unittest.TestCase):
    """The community page: home, nation and world; a place followed from a search, its 8 weeks,
    unfollowed. A health profile saved, and found in a PDF export only when ticked."""

    def export_pdf(self, d, ticked):
        box = d.find_element(By.ID, 'export-profile')
        if box.is_selected() != ticked:
            box.click()
        # The form's own fields, as its submit would send them, fetched with the page's session.
        encoded = d.execute_async_script("""
            var done = arguments[arguments.length - 1];
            var form = document.getElementById('export-profile').form;
            fetch(form.action + '?' + new URLSearchParams(new FormData(form)).toString())
                .then(function (r) { return r.arrayBuffer(); })
                .then(function (b) { var a = new Uint8Array(b), s = ''; for (var i = 0; i < a.length; i++) { s += String.fromCharCode(a[i]); } done(btoa(s)); });
            """)
        return pdf_text(base64.b64decode(encoded))

    def test_places_and_profile(self):
        d = make_driver()
        try:
            sign_in(d, CONFIG['placesMember'], '/community')
            main = d.find_element(By.TAG_NAME, 'main').text
            for text in ('Alpha, Testland', 'Campus region', 'United States', 'Nation', 'World'):
                self.assertIn(text, main)
            check_both_languages(d, 'community')
            d.find_element(By.ID, 'place-search').send_keys('cana')
            d.find_element(By.CSS_SELECTOR, 'form[role="search"] button').click()
            wait_for(d, lambda d: 'search=cana' in d.current_url)
            d.find_element(By.CSS_SELECTOR, 'form[action$="community/follow"] button').click()
            wait_for(d, lambda d: d.current_url.endswith('?followed=1'))
            canada = [r for r in d.find_elements(By.CSS_SELECTOR, 'table.places tbody tr') if 'Canada' in r.text]
            self.assertTrue(canada and 'Followed' in canada[0].text, 'Canada listed as followed')
            canada[0].find_element(By.LINK_TEXT, 'Canada').click()
            wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, 'svg.chart'))
            self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, 'Canada')
            self.assertIn('New deaths', d.find_element(By.CSS_SELECTOR, 'main table').text)
            self.assertEqual(len(d.find_elements(By.CSS_SELECTOR, 'main table tbody tr')), 8)
            self.assertIn('Source: imported.', d.find_element(By.TAG_NAME, 'main').text)
            check_both_languages(d, 'place')
            d.find_element(By.CSS_SELECTOR, 'form[action$="community/unfollow"] button').click()
            wait_for(d, lambda d: d.current_url.endswith('?unfollowed=1'))
            self.assertFalse([r for r in d.find_elements(By.CSS_SELECTOR, 'table.places tbody tr') if 'Canada' in r.text])

            d.get(url('/sharing'))
            d.find_element(By.ID, 'profile-birthYear').send_keys('1990')
            d.find_element(By.ID, 'profile-heightCm').send_keys('170')
            d.find_element(By.ID, 'profile-weightKg').send_keys('65')
            d.find_element(By.CSS_SELECTOR, 'form[action$="sharing/profile"] button').click()
            wait_for(d, lambda d: d.current_url.endswith('?profile=1'))
            main = d.find_element(By.TAG_NAME, 'main').text
            self.assertIn('BMI 22.5', main)
            self.assertIn('5 ft 7 in', main)
            check_page(d, 'sharing-profile-en')
            self.assertIn('Health profile: born 1990 · 170 cm · 65 kg · BMI 22.5', self.export_pdf(d, True))
            self.assertNotIn('Health profile', self.export_pdf(d, False))
        finally:
            d.quit()


class WebApp(unittest.TestCase):
    """The member pages as a web app: a manifest, a service worker that keeps the badge for
    offline use, a push shown as the reminder, and the Settings page's push button."""

    def test_installable_offline_badge_and_a_push(self):
        d = make_driver()
        try:
            sign_in(d, CONFIG['placesMember'], '/badge')
            href = d.find_element(By.CSS_SELECTOR, 'link[rel="manifest"]').get_attribute('href')
            manifest = d.execute_async_script(
                "var done = arguments[arguments.length - 1]; fetch(arguments[0]).then(function (r) { return r.json(); }).then(done, function (e) { done(String(e)); });",
                href)
            scope = '/c/%s/' % CONFIG['campus']
            self.assertEqual((manifest['scope'], manifest['start_url'], manifest['display']), (scope, scope, 'standalone'), manifest)
            self.assertTrue(manifest['icons'] and manifest['icons'][0]['type'] == 'image/svg+xml', manifest)
            registered = d.execute_async_script(
                "var done = arguments[arguments.length - 1]; navigator.serviceWorker.ready.then(function (r) { done(r.scope); }, function (e) { done(String(e)); });")
            self.assertEqual(registered, url('/'))
            # Once the worker controls the page, a visit to the badge keeps a copy.
            d.get(url('/badge'))
            wait_for(d, lambda d: d.execute_script('return !!navigator.serviceWorker.controller'))
            d.get(url('/badge'))
            wait_for(d, lambda d: d.execute_async_script(
                "var done = arguments[arguments.length - 1]; caches.open('attest-pages-v1').then(function (c) { return c.match(location.pathname); }).then(function (r) { done(!!r); }, function () { done(false); });"))
            online = d.find_element(By.TAG_NAME, 'h1').text
            d.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
            try:
                d.get(url('/badge'))
                self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, online)
            finally:
                d.delete_network_conditions()

            # A push as a push service would deliver it, through the DevTools protocol: the
            # worker shows the reminder, which opens today's survey.
            origin = CONFIG['base']
            d.execute_cdp_cmd('Browser.grantPermissions', {'origin': origin, 'permissions': ['notifications']})
            payload = json.dumps({'title': 'Reminder: today\'s health check', 'body': 'It takes a minute',
                                  'url': url('/'), 'tag': 'attest-reminder', 'lang': 'en'})
            d.execute_cdp_cmd('ServiceWorker.enable', {})
            # The protocol names a registration by an id it does not tell a command's caller:
            # the fresh profile's one registration is among the first, so every candidate is
            # sent the push (the protocol may accept an id of no registration and drop it).
            accepted, errors = 0, []
            for registration in range(0, 20):
                try:
                    d.execute_cdp_cmd('ServiceWorker.deliverPushMessage',
                                      {'origin': origin, 'registrationId': str(registration), 'data': payload})
                    accepted += 1
                except Exception as error:
                    errors.append(str(error)[:200])
            self.assertTrue(accepted, 'no service worker registration took the push: %s' % errors)
            shown = wait_for(d, lambda d: d.execute_async_script(
                "var done = arguments[arguments.length - 1]; navigator.serviceWorker.ready.then(function (r) { return r.getNotifications(); }).then(function (n) { done(n.length ? {title: n[0].title, body: n[0].body, url: n[0].data && n[0].data.url} : null); }, function () { done(null); });"),
                30)
            self.assertEqual(shown, {'title': "Reminder: today's health check", 'body': 'It takes a minute', 'url': url('/')})

            # Settings offers the push button where the browser has the Push API.
            d.get(url('/settings'))
            wait_for(d, lambda d: d.find_element(By.ID, 'push-subscribe').is_displayed())
            check_both_languages(d, 'settings-push')
            # The button's flow, with the browser's push service stood in for (none is reachable
            # here, so PushManager's two calls are replaced in the page): the subscription this
            # browser holds with another key (the campus renewed its key) is dropped first, since
            # the browser refuses a second, and the server keeps the new one, made with its key.
            from cryptography.hazmat.primitives import serialization
            from cryptography.hazmat.primitives.asymmetric import ec
            point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
                serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
            p256dh = base64.urlsafe_b64encode(point).rstrip(b'=').decode()
            auth = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b'=').decode()
            d.execute_script('''
                var p256dh = arguments[0], auth = arguments[1];
                window.pushCalls = [];
                var held = { options: { applicationServerKey: new Uint8Array(65).buffer },
                             unsubscribe: function () { window.pushCalls.push('unsubscribe'); return Promise.resolve(true); } };
                PushManager.prototype.getSubscription = function () { return Promise.resolve(held); };
                PushManager.prototype.subscribe = function (options) {
                  window.pushCalls.push('subscribe ' + new Uint8Array(options.applicationServerKey).length);
                  return Promise.resolve({ options: options, toJSON: function () {
                    return { endpoint: 'https://push.example.net/send/chromium', expirationTime: null, keys: { p256dh: p256dh, auth: auth } };
                  } });
                };''', p256dh, auth)
            button = d.find_element(By.ID, 'push-subscribe')
            done = button.get_attribute('data-t-done')
            button.click()
            wait_for(d, lambda d: d.find_element(By.ID, 'push-status').text in (done, button.get_attribute('data-t-failed')))
            self.assertEqual(d.find_element(By.ID, 'push-status').text, done)
            self.assertEqual(d.execute_script('return window.pushCalls'), ['unsubscribe', 'subscribe 65'])
            self.assertTrue(d.find_element(By.ID, 'channel-push').is_selected())
            d.get(url('/settings'))
            self.assertTrue(d.find_element(By.ID, 'channel-push').is_selected(), 'push on, as the server keeps it')
        finally:
            d.quit()


class Unsubscribe(unittest.TestCase):
    """A message's unsubscribe link, opened in the browser: the page in the language the member
    chose for their messages (else the browser's), its button, and a link cut short."""

    def test_the_pages_speak_the_members_language(self):
        d = make_driver()
        try:
            d.get(CONFIG['base'] + CONFIG['unsubscribeEnglish'])
            self.assertEqual(d.find_element(By.TAG_NAME, 'html').get_attribute('lang'), 'en')
            self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, 'Stop push notifications?')
            check_page(d, 'unsubscribe-en')
            d.get(CONFIG['base'] + CONFIG['unsubscribeSpanish'])
            self.assertEqual(d.find_element(By.TAG_NAME, 'html').get_attribute('lang'), 'es')
            self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, '¿Dejar de recibir correos?')
            check_page(d, 'unsubscribe-es')
            d.find_element(By.CSS_SELECTOR, 'button[type="submit"]').click()
            wait_for(d, lambda d: d.find_element(By.TAG_NAME, 'h1').text == 'Suscripción cancelada')
            check_page(d, 'unsubscribed-es')
            # Cut short, as a mail client wrapping a long line may leave it: a page saying so,
            # with the way to the settings page.
            d.get(CONFIG['base'] + CONFIG['unsubscribeEnglish'][:-3])
            self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, 'This link does not work')
            check_page(d, 'unsubscribe-broken-en')
            d.find_element(By.LINK_TEXT, 'settings').click()
            wait_for(d, lambda d: '/signin' in d.current_url)
        finally:
            d.quit()


class ClinicianLink(unittest.TestCase):
    """A link a member gave a clinician, opened in a Spanish browser: the page in Spanish, and a
    link cut short or naming an unknown campus a page saying what to do, not a problem's JSON."""

    def test_the_page_and_its_refusals_speak_the_browsers_language(self):
        d = make_driver(languages='es-MX,es')
        try:
            d.get(CONFIG['base'] + CONFIG['sharedLink'])
            self.assertEqual(d.find_element(By.TAG_NAME, 'html').get_attribute('lang'), 'es')
            self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, 'Diario de salud y episodios')
            self.assertIn('Compartido por', d.find_element(By.TAG_NAME, 'main').text)
            check_page(d, 'shared-link-es')
            for path, name in ((CONFIG['sharedLink'][:-2], 'shared-link-broken-es'),
                               (CONFIG['sharedLink'].replace('/north/', '/nrth/'), 'shared-link-nowhere-es')):
                d.get(CONFIG['base'] + path)
                self.assertEqual(d.find_element(By.TAG_NAME, 'h1').text, 'Este enlace no abre nada')
                self.assertIn('Pida un enlace nuevo', d.find_element(By.TAG_NAME, 'main').text)
                check_page(d, name)
        finally:
            d.quit()


class AdminAndHealthOfficer(unittest.TestCase):
    def test_dashboard_equals_the_api(self):
        d = make_driver()
        try:
            sign_in(d, CONFIG['admin'], '/admin')
            start = d.find_element(By.ID, 'from').get_attribute('value')
            end = d.find_element(By.ID, 'to').get_attribute('value')
            figures = api('/v1/campuses/%s/admin/dashboard?from=%s&to=%s' % (CONFIG['campus'], start, end), CONFIG['adminToken'])
            total = figures['total']
            rate = total['complianceRate']
            shown = d.find_element(By.ID, 'compliance').text
            if rate is None:
                self.assertEqual(shown, 'no data')
            else:
                self.assertAlmostEqual(float(shown.rstrip('%')), rate * 100, delta=0.051)
            self.assertIn('%d submitted, %d on time, %d late, %d missing' % (total['submitted'], total['onTime'], total['late'], total['missing']),
                          d.find_element(By.TAG_NAME, 'main').text)
            today = figures['days'][-1]
            rows = [r for r in d.find_elements(By.CSS_SELECTOR, 'table tbody tr') if r.find_elements(By.TAG_NAME, 'th') and r.find_element(By.TAG_NAME, 'th').text == today['date']]
            self.assertTrue(rows, 'a row for %s' % today['date'])
            cells = [c.text for c in rows[0].find_elements(By.TAG_NAME, 'td')]
            self.assertEqual(cells[:5], [str(today['activeMembers']), str(today['submitted']), str(today['onTime']), str(today['late']), str(today['missing'])])
            pie = d.find_element(By.CSS_SELECTOR, '#pie-desc').get_attribute('textContent')
            self.assertIn('Green %d' % today['colors']['green'], pie)
            self.assertTrue(d.find_elements(By.CSS_SELECTOR, 'svg.chart polyline'))
            check_both_languages(d, 'admin')
            # Dates it cannot show: the form again, the problem by the date (focused), no figures.
            d.execute_script("document.getElementById('to').value = arguments[0]", '2020-01-01')
            d.find_element(By.CSS_SELECTOR, 'form.range button[type="submit"]').click()
            wait_for(d, lambda d: d.title.startswith('Error: '))
            self.assertIn('Choose a last day on or after the first day', d.find_element(By.CSS_SELECTOR, '.error-summary').text)
            self.assertEqual(d.switch_to.active_element.get_attribute('id'), 'to')
            self.assertEqual(d.find_element(By.ID, 'to').get_attribute('aria-invalid'), 'true')
            self.assertFalse(d.find_elements(By.ID, 'compliance'))
            check_both_languages(d, 'admin-range-error')
        finally:
            d.quit()

    def test_follow_ups(self):
        d = make_driver()
        try:
            sign_in(d, CONFIG['officer'], '/admin/follow-ups')
            rows = d.find_elements(By.CSS_SELECTOR, 'main tbody tr')
            self.assertTrue(rows, 'the red and yellow list')
            self.assertTrue(all('@example.edu' in row.text for row in rows))
            check_both_languages(d, 'follow-ups')
        finally:
            d.quit()

    def test_health_office_and_the_members_record(self):
        d = make_driver()
        try:
            sign_in(d, CONFIG['officer'], '/health')
            headings = [h.text for h in d.find_elements(By.CSS_SELECTOR, 'main h2')]
            self.assertEqual(headings, ['Results that match no member', 'Exemptions to decide', 'Exemptions in force',
                                        'Isolations and quarantines'])
            in_force = d.find_element(By.ID, 'exemptions-in-force')
            self.assertIn('ugo@example.edu', in_force.text)
            self.assertEqual(len(in_force.find_elements(By.CSS_SELECTOR, 'input[type="date"][name="expires"]')), 1)
            self.assertTrue(d.find_element(By.ID, 'isolation-email').is_displayed())
            check_both_languages(d, 'health')
        finally:
            d.quit()
        d = make_driver()
        try:
            sign_in(d, CONFIG['member'], '/records')
            self.assertTrue(d.find_element(By.ID, 'exemption-note').is_displayed())
            check_both_languages(d, 'records')
        finally:
            d.quit()

    def test_zz_an_exemption_asked_for_and_approved(self):
        """A member asks for an exemption on their record page; a health officer approves it on
        theirs with a last day (the date field refuses one before today before anything is sent);
        the member reads the approval. Last in its class: Ugo's is the one in force before."""
        member = 'edna@example.edu'
        d = make_driver()
        try:
            sign_in(d, member, '/records')
            d.find_element(By.CSS_SELECTOR, '#exemption-kind option[value="medical"]').click()
            d.find_element(By.ID, 'exemption-note').send_keys('a letter from my doctor')
            d.find_element(By.CSS_SELECTOR, 'form[action$="records/exemptions"] button[type="submit"]').click()
            wait_for(d, lambda d: 'asked=1' in d.current_url)
            self.assertIn('Medical exemption: waiting for the health office.', d.find_element(By.ID, 'exemptions').text)
        finally:
            d.quit()
        d = make_driver()
        try:
            sign_in(d, CONFIG['officer'], '/health')
            row = [r for r in d.find_elements(By.CSS_SELECTOR, '#pending-exemptions tbody tr') if member in r.text][0]
            self.assertIn('a letter from my doctor', row.text)
            field = row.find_element(By.CSS_SELECTOR, 'input[type="date"][name="expires"]')
            first = datetime.date.fromisoformat(field.get_attribute('min'))
            valid = lambda day: d.execute_script(
                'arguments[0].value = arguments[1]; return arguments[0].checkValidity();', field, day.isoformat())
            self.assertFalse(valid(first - datetime.timedelta(days=1)), 'a day before today is refused by the field')
            self.assertFalse(valid(first + datetime.timedelta(days=732)), 'more than two years ahead too')
            last = first + datetime.timedelta(days=30)
            self.assertTrue(valid(last))
            row.find_element(By.CSS_SELECTOR, 'form button[type="submit"]').click()
            wait_for(d, lambda d: 'done=1' in d.current_url)
            in_force = d.find_element(By.ID, 'exemptions-in-force')
            self.assertIn(member, in_force.text)
        finally:
            d.quit()
        d = make_driver()
        try:
            sign_in(d, member, '/records')
            self.assertIn('Medical exemption: approved until', d.find_element(By.ID, 'exemptions').text)
        finally:
            d.quit()


def observation(specimen, email, detected):
    """A FHIR R4 Observation as a laboratory sends it: collected two hours ago, resulted now."""
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    return {'resourceType': 'Observation', 'status': 'final',
            'code': {'coding': [{'system': 'http://loinc.org', 'code': '94500-6'}]},
            'subject': {'identifier': {'system': 'mailto', 'value': email}},
            'specimen': {'identifier': {'value': specimen}},
            'effectiveDateTime': (now - datetime.timedelta(hours=2)).isoformat().replace('+00:00', 'Z'),
            'issued': now.isoformat().replace('+00:00', 'Z'),
            'valueCodeableConcept': {'coding': [{'system': 'http://snomed.info/sct',
                                                 'code': '260373001' if detected else '260415000'}]}}


class LabResults(unittest.TestCase):
    """A member answers and shows a green badge; a laboratory's positive result through the FHIR
    route turns it red, naming the isolation, on the next load; its correction to negative gives
    back the colour the answers give."""

    def test_a_positive_result_and_its_correction(self):
        member, lab = 'ivy@example.edu', CONFIG['labToken']
        d = make_driver()
        try:
            sign_in(d, member)
            answer_survey(d)
            wait_for(d, lambda d: d.current_url.endswith('/badge'))
            self.assertIn('green', d.find_element(By.CSS_SELECTOR, 'section.badge').get_attribute('class'))
            sent = api('/v1/campuses/%s/lab/results' % CONFIG['campus'], lab, observation('IVY-1', member, True))
            self.assertEqual((sent['matched'], sent['statusesChanged']), (1, 1), sent)
            d.get(url('/badge'))
            badge = d.find_element(By.CSS_SELECTOR, 'section.badge')
            self.assertIn('red', badge.get_attribute('class'))
            self.assertIn('Isolation until', badge.text)
            corrected = api('/v1/campuses/%s/lab/results' % CONFIG['campus'], lab, observation('IVY-1', member, False))
            self.assertEqual(corrected['corrected'], 1, corrected)
            d.get(url('/badge'))
            badge = d.find_element(By.CSS_SELECTOR, 'section.badge')
            self.assertIn('green', badge.get_attribute('class'))
            self.assertNotIn('Isolation', badge.text)
        finally:
            d.quit()


SHC_FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'SmartHealthCards')


def shc_card(family, given, birth_date, doses):
    """A SMART Health Card's QR text, made here with Python's zlib and cryptography (not the
    server's code) and signed with the specification's example issuer's published test key."""
    with open(os.path.join(SHC_FIXTURES, 'example-issuer-jwks.private.json')) as handle:
        jwk = json.load(handle)['keys'][0]
    entries = [{'fullUrl': 'resource:0', 'resource': {'resourceType': 'Patient', 'name': [{'family': family, 'given': given}],
                                                       'birthDate': birth_date}}]
    for index, (cvx, day) in enumerate(doses):
        entries.append({'fullUrl': 'resource:%d' % (index + 1), 'resource': {
            'resourceType': 'Immunization', 'status': 'completed', 'occurrenceDateTime': day,
            'vaccineCode': {'coding': [{'system': 'http://hl7.org/fhir/sid/cvx', 'code': cvx}]},
            'patient': {'reference': 'resource:0'}}})
    payload = {'iss': 'https://spec.smarthealth.cards/examples/issuer', 'nbf': time.time() - 60,
               'vc': {'type': ['https://smarthealth.cards#health-card', 'https://smarthealth.cards#immunization'],
                      'credentialSubject': {'fhirVersion': '4.0.1',
                                            'fhirBundle': {'resourceType': 'Bundle', 'type': 'collection', 'entry': entries}}}}
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    body = deflater.compress(json.dumps(payload, separators=(',', ':')).encode()) + deflater.flush()
    enc = lambda data: base64.urlsafe_b64encode(data).rstrip(b'=').decode()
    signing_input = enc(json.dumps({'zip': 'DEF', 'alg': 'ES256', 'kid': jwk['kid']}, separators=(',', ':')).encode()) + '.' + enc(body)
    key = ec.derive_private_key(int.from_bytes(b64url(jwk['d']), 'big'), ec.SECP256R1())
    r, s = decode_dss_signature(key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
    jws = signing_input + '.' + enc(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))
    return 'shc:/' + ''.join('%02d' % (ord(c) - 45) for c in jws)


class VaccinationCards(unittest.TestCase):
    """A member presents SMART Health Cards on their record page: the specification's example
    card pasted, and as a photo of its QR code (at west, which does not compare the card's
    person); a card made here for the member by name and birth date (at north, strict), and
    one of another birth date refused with the reason beside the field."""

    def present_text(self, d, text):
        field = d.find_element(By.ID, 'shc-text')
        # The QR text is 1,200 digits and more: set at once, as a paste does.
        d.execute_script('arguments[0].value = arguments[1];', field, text)
        d.find_element(By.CSS_SELECTOR, '#card-form button[type="submit"]').click()

    def doses(self, d):
        return [[cell.text for cell in row.find_elements(By.TAG_NAME, 'td')] for row in d.find_elements(By.CSS_SELECTOR, '#doses tbody tr')]

    def test_cards_pasted_photographed_and_refused(self):
        with open(os.path.join(SHC_FIXTURES, 'example-00.qr.txt')) as handle:
            example = handle.read().strip()
        d = make_driver()
        try:
            sign_in(d, CONFIG['shcMember'], '/records', campus=CONFIG['shcCampus'])
            self.assertIn('not presented', d.find_element(By.TAG_NAME, 'main').text)
            self.present_text(d, example)
            wait_for(d, lambda d: 'card=1' in d.current_url)
            self.assertIn('verified', d.find_element(By.CSS_SELECTOR, '[role="status"]').text)
            self.assertEqual(self.doses(d), [['Fri, Jan 1, 2021', 'Moderna', 'https://spec.smarthealth.cards/examples/issuer'],
                                             ['Fri, Jan 29, 2021', 'Moderna', 'https://spec.smarthealth.cards/examples/issuer']])
            self.assertEqual(d.find_element(By.ID, 'vaccination').text, 'Vaccination complete on Fri, Jan 29, 2021.')
            check_both_languages(d, 'records-vaccination')
        finally:
            d.quit()
        # The same card as a photo of its QR code (drawn by Python's qrcode), read by the server.
        photo = os.path.join(tempfile.mkdtemp(), 'card.png')
        code = qrcode.QRCode(error_correction=qrcode.constants.ERROR_CORRECT_L, box_size=4, border=4)
        code.add_data(example)
        code.make(fit=True)
        code.make_image().save(photo)
        d = make_driver()
        try:
            sign_in(d, CONFIG['shcPhotoMember'], '/records', campus=CONFIG['shcCampus'])
            d.find_element(By.ID, 'shc-file').send_keys(photo)
            d.find_element(By.CSS_SELECTOR, '#card-form button[type="submit"]').click()
            wait_for(d, lambda d: 'card=1' in d.current_url)
            self.assertEqual(len(self.doses(d)), 2)
        finally:
            d.quit()
        # North compares strictly: the member's name and birth date came from the identity provider.
        d = make_driver()
        try:
            sign_in(d, CONFIG['shcStrictMember'], '/records')
            self.present_text(d, shc_card('Card', ['Vera'], '1990-04-03', [('208', '2021-04-01'), ('208', '2021-04-22')]))
            error = wait_for(d, lambda d: d.find_element(By.ID, 'shc-text-error'))
            self.assertIn('another person', error.text)
            self.assertEqual(d.find_element(By.ID, 'shc-text').get_attribute('aria-invalid'), 'true')
            self.assertFalse(d.find_elements(By.CSS_SELECTOR, '#doses tbody tr'))
            self.present_text(d, shc_card('Card', ['Vera'], '1990-04-02', [('208', '2021-04-01'), ('208', '2021-04-22')]))
            wait_for(d, lambda d: 'card=1' in d.current_url)
            self.assertEqual([row[0] for row in self.doses(d)], ['Thu, Apr 1, 2021', 'Thu, Apr 22, 2021'])
        finally:
            d.quit()


class TimedResult(unittest.TextTestResult):
    """unittest's verbose result, each test's line ending with how long it took."""

    def startTest(self, test):
        self.started = time.monotonic()
        super().startTest(test)

    def addSuccess(self, test):
        unittest.TestResult.addSuccess(self, test)
        self.stream.writeln('ok (%.1f s)' % (time.monotonic() - self.started))
        self.stream.flush()


if __name__ == '__main__':
    with open(sys.argv[1]) as handle:
        CONFIG.update(json.load(handle))
    os.makedirs(CONFIG['screenshots'], exist_ok=True)
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    outcome = unittest.TextTestRunner(verbosity=2, stream=sys.stderr, resultclass=TimedResult).run(suite)
    for name, violations, serious in AXE_REPORT:
        sys.stderr.write('axe %-24s %d violations, %d serious or critical\n' % (name, violations, serious))
    sys.exit(0 if outcome.wasSuccessful() else 1)
