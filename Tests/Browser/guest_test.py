#!/usr/bin/env python3
"""Visitors in a real browser (issue 65): Debian's Chromium driven by selenium.

Run by the Swift test GuestBrowserTests, which starts the server, a loopback SMTP server
(aiosmtpd, writing each message it accepts to a directory) and a campus open to guests:

    python3 Tests/Browser/guest_test.py CONFIG.json

A visitor registers, reads the code from the SMTP server's inbox (parsed by Python's `email`
package), answers and gets a GUEST badge whose QR code (read back by pyzbar) verifies at the
door scanner as "Guest of Alice Member"; six wrong codes lock a visit; two visitors in a row
at the kiosk, the second seeing nothing of the first; 1,000 sign-ups from one address get
429s. Every page is checked with axe-core in English and Spanish and photographed.
"""
import base64
import email
import glob
import io
import json
import os
import sys
import time
import unittest
import urllib.error
import urllib.request
from email import policy

from PIL import Image
from pyzbar import pyzbar
from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The pages' own test's helpers: the driver, waits, axe and screenshots, the campus's URLs.
from browser_test import CONFIG, check_both_languages, check_page, make_driver, url, wait_for  # noqa: E402


def inbox(address, seconds=15):
    """The messages the SMTP server accepted for `address`, each parsed by Python's email package."""
    deadline = time.time() + seconds
    while True:
        found = []
        for path in sorted(glob.glob(os.path.join(CONFIG['smtpDir'], '*.json')), key=lambda p: int(os.path.basename(p)[:-5])):
            with open(path) as file:
                accepted = json.load(file)
            if address in accepted['to']:
                found.append(email.message_from_bytes(accepted['data'].encode('latin-1'), policy=policy.default))
        if found or time.time() > deadline:
            return found
        time.sleep(0.2)


def code_for(address):
    messages = inbox(address)
    assert messages, 'no message reached ' + address
    message = messages[-1]
    assert not message.defects, message.defects
    subject = str(message['Subject'])
    code = subject[:6]
    assert code.isdigit(), subject
    text = message.get_body(preferencelist=('plain',)).get_content()
    assert code in text and 'Alice Member' in text, text
    return code, message


def register(driver, name, address, host='Alice Member'):
    driver.get(url('/visit'))
    driver.find_element(By.ID, 'visit-name').send_keys(name)
    driver.find_element(By.ID, 'visit-email').send_keys(address)
    driver.find_element(By.ID, 'visit-host').send_keys(host)
    driver.find_element(By.CSS_SELECTOR, 'main form button[type="submit"]').click()
    wait_for(driver, lambda d: '/visit/code' in d.current_url)


def enter_code(driver, code):
    field = driver.find_element(By.ID, 'visit-code')
    field.clear()
    field.send_keys(code)
    driver.find_element(By.CSS_SELECTOR, 'main form button[type="submit"]').click()


def claims(token):
    payload = token.split('.')[1]
    return json.loads(base64.urlsafe_b64decode(payload + '=' * (-len(payload) % 4)))


class Visitor(unittest.TestCase):
    def setUp(self):
        self.driver = make_driver()

    def tearDown(self):
        self.driver.quit()

    def test_1_a_visitor_checks_in_with_the_emailed_code_and_the_door_reads_guest_of_alice(self):
        d = self.driver
        d.get(url('/visit'))
        check_both_languages(d, 'visit')
        # A host nobody is: the form again, the message by the field.
        register_fails = d
        register_fails.find_element(By.ID, 'visit-name').send_keys('Vera Visitor')
        register_fails.find_element(By.ID, 'visit-email').send_keys('vera@visitor.example.org')
        register_fails.find_element(By.ID, 'visit-host').send_keys('Zed Nobody')
        d.find_element(By.CSS_SELECTOR, 'main form button[type="submit"]').click()
        wait_for(d, lambda d: d.find_elements(By.ID, 'visit-host-error'))
        self.assertEqual(d.find_element(By.ID, 'visit-host').get_attribute('aria-invalid'), 'true')
        check_page(d, 'visit-error-en')

        register(d, 'Vera Visitor', 'vera@visitor.example.org')
        check_page(d, 'visit-code-en')
        code, message = code_for('vera@visitor.example.org')
        self.assertIsNone(message['List-Unsubscribe'])
        wrong = '000000' if code != '000000' else '111111'
        enter_code(d, wrong)
        wait_for(d, lambda d: d.find_elements(By.ID, 'visit-code-error'))
        self.assertIn('4 tries left', d.find_element(By.ID, 'visit-code-error').text)
        enter_code(d, code)
        wait_for(d, lambda d: d.current_url.endswith('/visit/today'))
        self.assertIn('Alice Member', d.find_element(By.TAG_NAME, 'main').text)
        check_both_languages(d, 'visit-survey')
        d.find_element(By.CSS_SELECTOR, 'input[name="answers.fever"][value="no"]').click()
        d.find_element(By.CSS_SELECTOR, 'main form button[type="submit"]').click()
        wait_for(d, lambda d: d.find_elements(By.CSS_SELECTOR, 'section.badge'))
        badge = d.find_element(By.CSS_SELECTOR, 'section.badge')
        self.assertIn('GUEST · GREEN', badge.text.upper())
        self.assertIn('Guest of Alice Member', badge.text)
        self.assertIn('Vera Visitor', badge.text)
        check_both_languages(d, 'visit-badge')
        # No member's session: the guest's own pass and the anonymous form token only.
        names = sorted(c['name'] for c in d.get_cookies() if c['name'] != 'attest-lang')
        self.assertEqual(names, ['attest-csrf', 'attest-guest-' + CONFIG['campus']])
        # The QR code on the screen holds the signed badge token, with the host in `guest`.
        png = d.find_element(By.CSS_SELECTOR, 'svg.qr').screenshot_as_png
        decoded = pyzbar.decode(Image.open(io.BytesIO(png)).convert('L'))
        self.assertEqual(len(decoded), 1)
        token = decoded[0].data.decode()
        self.assertEqual(claims(token)['guest'], 'Alice Member')
        self.assertEqual(claims(token)['color'], 'green')

        # At the door: the screener's scanner says whose guest this is.
        door = make_driver()
        try:
            door.get(CONFIG['base'] + '/healthz')
            door.add_cookie({'name': 'attest-' + CONFIG['campus'], 'value': CONFIG['screenerToken'], 'path': '/'})
            door.get(url('/scan'))
            wait_for(door, lambda d: d.execute_script("return localStorage.getItem('attest-keys-%s')" % CONFIG['campus']))
            door.find_element(By.ID, 'token').send_keys(token)
            door.find_element(By.CSS_SELECTOR, '#paste-form button[type="submit"]').click()
            wait_for(door, lambda d: 'Guest of' in d.find_element(By.ID, 'verdict').text)
            verdict = door.find_element(By.ID, 'verdict').text
            self.assertIn('Genuine', verdict)
            self.assertIn('Guest of Alice Member', verdict)
            check_page(door, 'scan-guest-en')
        finally:
            door.quit()

    def test_2_six_wrong_codes_lock_the_visit(self):
        d = make_driver(javascript=False)
        try:
            register(d, 'Lou Locked', 'lou@visitor.example.org')
            code, _ = code_for('lou@visitor.example.org')
            visit_page = d.current_url
            wrong = '123456' if code != '123456' else '654321'
            for left in (4, 3, 2, 1):
                enter_code(d, wrong)
                # The last answer's page still shows its error until the new one loads: wait
                # for this answer's count (a stale element is looked up again), not any error.
                expected = '%d %s left' % (left, 'try' if left == 1 else 'tries')
                wait_for(d, lambda d: expected in d.find_element(By.ID, 'visit-code-error').text)
            enter_code(d, wrong)
            wait_for(d, lambda d: 'locked' in d.find_element(By.TAG_NAME, 'main').text)
            d.save_screenshot(os.path.join(CONFIG['screenshots'], 'visit-locked-en.png'))
            # The sixth, even the right code, finds the visit locked.
            d.get(visit_page)
            enter_code(d, code)
            wait_for(d, lambda d: 'locked' in d.find_element(By.TAG_NAME, 'main').text)
            self.assertFalse(any(c['name'].startswith('attest-guest-') for c in d.get_cookies()))
        finally:
            d.quit()

    def test_3_two_visitors_in_a_row_at_the_kiosk(self):
        d = self.driver
        d.get(CONFIG['base'] + '/healthz')
        d.add_cookie({'name': 'attest-' + CONFIG['campus'], 'value': CONFIG['screenerToken'], 'path': '/'})
        d.get(url('/kiosk'))
        check_both_languages(d, 'kiosk')
        self.assertEqual(d.find_element(By.ID, 'kiosk-form').get_attribute('autocomplete'), 'off')
        history = d.execute_script('return history.length')
        cookies = sorted(c['name'] for c in d.get_cookies())

        def check_in(name, address, fever):
            d.find_element(By.ID, 'visit-name').send_keys(name)
            d.find_element(By.ID, 'visit-email').send_keys(address)
            d.find_element(By.ID, 'visit-host').send_keys('alice@example.edu')
            d.find_element(By.CSS_SELECTOR, 'input[name="answers.fever"][value="%s"]' % fever).click()
            d.find_element(By.CSS_SELECTOR, '#kiosk-form button[type="submit"]').click()
            wait_for(d, lambda d: d.find_element(By.ID, 'kiosk-result').is_displayed())
            result = d.find_element(By.ID, 'kiosk-result')
            self.assertIn(name, result.text)
            self.assertIn('Guest of Alice Member', result.text)
            png = d.find_element(By.CSS_SELECTOR, '#kiosk-qr svg').screenshot_as_png
            token = pyzbar.decode(Image.open(io.BytesIO(png)).convert('L'))[0].data.decode()
            self.assertEqual(claims(token)['guest'], 'Alice Member')
            return token

        first = check_in('Kim First', 'kim@visitor.example.org', 'no')
        check_page(d, 'kiosk-badge-en')
        d.find_element(By.ID, 'kiosk-next').click()
        wait_for(d, lambda d: d.find_element(By.ID, 'kiosk-form').is_displayed())
        # Nothing of the first visitor is left on the page, in its fields or in the browser.
        self.assertNotIn('Kim First', d.find_element(By.TAG_NAME, 'body').text)
        self.assertNotIn('Kim First', d.page_source)
        for field in ('visit-name', 'visit-email', 'visit-host'):
            self.assertEqual(d.find_element(By.ID, field).get_attribute('value'), '')
        self.assertFalse(d.find_element(By.CSS_SELECTOR, 'input[name="answers.fever"][value="no"]').is_selected())
        self.assertEqual(d.find_elements(By.CSS_SELECTOR, '#kiosk-qr svg'), [])
        second = check_in('Lee Second', 'lee@visitor.example.org', 'yes')
        self.assertNotEqual(first, second)
        self.assertNotIn('Kim First', d.find_element(By.TAG_NAME, 'body').text)
        self.assertEqual(d.execute_script('return history.length'), history)
        self.assertEqual(sorted(c['name'] for c in d.get_cookies()), cookies)
        self.assertEqual(inbox('kim@visitor.example.org', seconds=0), [], 'no code is emailed at the kiosk')

    def test_4_a_thousand_sign_ups_from_one_address_get_429s(self):
        statuses = {}
        for index in range(1000):
            body = json.dumps({'name': 'V %d' % index, 'email': 'v%d@visitor.example.org' % index, 'host': 'alice@example.edu'}).encode()
            request = urllib.request.Request(CONFIG['base'] + '/v1/campuses/%s/guests/visits' % CONFIG['campus'], data=body,
                                             headers={'Content-Type': 'application/json'})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status = response.status
            except urllib.error.HTTPError as error:
                status = error.code
                if status == 429:
                    self.assertTrue(error.headers.get('Retry-After'))
            statuses[status] = statuses.get(status, 0) + 1
        self.assertGreaterEqual(statuses.get(429, 0), 990, statuses)
        self.assertEqual(set(statuses), {201, 429}, statuses)


if __name__ == '__main__':
    with open(sys.argv[1]) as file:
        CONFIG.update(json.load(file))
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(Visitor)
    result = unittest.TextTestRunner(verbosity=2, stream=sys.stderr).run(suite)
    sys.exit(0 if result.wasSuccessful() and result.testsRun == 4 else 1)
