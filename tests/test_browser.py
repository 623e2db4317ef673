"""The page at / in a real browser: headless Chromium, driven by Playwright.

These tests skip, with a reason, where Chromium or Playwright is missing; .ci/run
installs both, so CI runs them.
"""

from __future__ import annotations

import contextlib
import shutil

import pytest
import requests

import petstore_stub as stub

CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')
#: Headless, and quiet: no call to the network this machine may not have.
CHROMIUM_ARGS = ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-quic',
                 '--no-first-run', '--disable-background-networking',
                 '--disable-component-update', '--disable-sync']

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason='no Chromium here (Debian: apt-get install chromium)'),
]


@pytest.fixture(scope='module')
def browser():
    # Playwright is imported here, not at the top: the fast tier, which collects this file but runs
    # none of it, then spends no 0.2 s importing it.
    sync_api = pytest.importorskip('playwright.sync_api', reason='Playwright is not installed')
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.clock.install()  # its time flows as ever, and tick() moves it on to a refresh
    yield page
    context.close()


def expect(actual):
    """Playwright's ``expect``, from the module the browser fixture has imported."""
    from playwright.sync_api import expect as playwright_expect
    return playwright_expect(actual)


def tick(page) -> None:
    """Move the page's clock on by its refresh interval, so the refresh comes now, not in 1 s."""
    page.clock.run_for(1000)


def origin(server: stub.StubServer) -> str:
    return server.url.removesuffix(server.app.base_path)


def submit(page, form: str, **fields: str) -> None:
    for name, value in fields.items():
        field = page.locator(f'#{form} [name={name}]')
        if field.evaluate('element => element.tagName') == 'SELECT':
            field.select_option(value)
        else:
            field.fill(value)
    page.locator(f'#{form} button[type=submit]').click()


def test_the_page_served_over_https_lists_the_pets_over_https(browser):
    with stub.serve(fixtures=True, tls=True) as server:
        # This browser does not hold the stub's CA; a person's would, or mkcert's.
        context = browser.new_context(ignore_https_errors=True)
        page = context.new_page()
        page.set_default_timeout(10_000)
        page.goto(origin(server) + '/')
        expect(page.locator('#base-url')).to_have_text(server.url)
        expect(page.locator('#pets-table tbody tr')).to_have_count(13)  # no mixed content
        context.close()
        assert [(entry['operation'], entry['status']) for entry in server.requests] == [
            ('listPets', 200)]


def test_a_person_lists_adds_and_gets_a_pet_and_sees_each_exchange(page):
    with stub.serve(fixtures=True) as server:
        page.goto(origin(server) + '/')
        expect(page.locator('#base-url')).to_have_text(server.url)
        expect(page.locator('#api-key')).to_have_value(stub.DEMO_API_KEY)
        expect(page.locator('#pets-table tbody tr')).to_have_count(13)  # listed on arrival

        submit(page, 'list-form', limit='2', status='sold')
        expect(page.locator('#status')).to_have_text('200 OK')
        expect(page.locator('#pets-table tbody tr')).to_have_count(2)
        expect(page.locator('#curl')).to_have_text(
            f"curl -i -H 'Authorization: Bearer {stub.DEMO_API_KEY}' "
            f"'{server.url}/pets?limit=2&status=sold'")

        submit(page, 'create-form', name='Pip', categoryId='3', status='available')
        expect(page.locator('#status')).to_have_text('201 Created')
        expect(page.locator('#request')).to_contain_text('POST /v1/pets HTTP/1.1')
        expect(page.locator('#request')).to_contain_text('Content-Type: application/json')
        expect(page.locator('#pets-table tbody tr')).to_have_count(2)  # the sold ones, listed again
        expect(page.locator('#response-headers')).to_contain_text('/v1/pets/14')
        expect(page.locator('#response-headers tr.note', has_text='location')).to_contain_text(
            'where the new pet is')
        assert '"name": "Pip"' in page.locator('#response-body').text_content()

        submit(page, 'get-form', petId='14')
        expect(page.locator('#status')).to_have_text('200 OK')
        notes = page.locator('#response-headers tr.note')
        for header in ('deprecation', 'sunset', 'link'):
            expect(notes.filter(has_text=header)).to_have_count(1)
        expect(page.locator('#response-headers')).to_contain_text('Thu, 05 Dec 2030 00:00:00 GMT')
        server.assert_called('createPet', json={'name': 'Pip', 'categoryId': 3,
                                                'status': 'available'})


def test_an_operation_clicked_leaves_the_page_where_it_is(page):
    with stub.serve(fixtures=True) as server:
        page.set_viewport_size({'width': 1280, 'height': 800})
        page.goto(origin(server) + '/')
        expect(page.locator('#pets-table tbody tr')).to_have_count(13)
        for form in ('list-form', 'get-form', 'create-form'):
            submit(page, form)
            expect(page.locator('#status')).not_to_have_text('waiting…')
            assert page.evaluate('window.scrollY') == 0, form


def test_a_list_refused_says_the_table_is_an_older_one_and_the_body_is_shown_as_sent(page):
    with stub.serve(fixtures=True) as server:
        page.goto(origin(server) + '/')
        expect(page.locator('#pets-source')).to_have_text('(the last list: the first 20)')
        submit(page, 'list-form', limit='0')
        expect(page.locator('#status')).to_have_text('400 Bad Request')
        expect(page.locator('#pets-source')).to_contain_text('an older list, the first 20')
        sent = requests.get(server.url + '/pets?limit=0', headers=server.headers, timeout=10).text
        assert page.locator('#response-body').text_content() == sent


def test_the_coverage_panel_shows_what_the_calls_met_as_they_arrive(page):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        panel = page.locator('#coverage tr', has_text='getPet')
        expect(panel).to_contain_text('404 never')
        requests.get(server.url + '/pets/7', headers=server.headers, timeout=10)
        tick(page)
        expect(panel).to_contain_text('404 ×1')
        assert page.evaluate('window.scrollY') == 0


def test_the_forms_send_the_values_they_show_and_an_emptied_field_sends_nothing(page):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        page.locator('#create-form button[type=submit]').click()
        expect(page.locator('#status')).to_have_text('201 Created')
        page.locator('#get-form button[type=submit]').click()
        expect(page.locator('#status')).to_have_text('200 OK')
        server.assert_called('createPet', json={'name': 'Pip', 'categoryId': 3})
        server.assert_called('GET /pets/1')
        submit(page, 'get-form', petId='')
        assert page.locator('#get-form [name=petId]').evaluate('field => field.validationMessage')
        assert page.locator('#request').text_content().startswith('GET /v1/pets/1 HTTP/1.1')


def test_without_a_key_the_page_shows_the_401_and_why(page):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        page.locator('#clear-key').click()
        submit(page, 'list-form')
        expect(page.locator('#status')).to_have_text('401 Unauthorized')
        expect(page.locator('#error')).to_have_text(
            'unauthorized: send the API key as Authorization: Bearer <key>')
        expect(page.locator('#response-headers tr.note', has_text='www-authenticate')).to_contain_text(
            'Bearer realm="petstore"')
        assert 'Authorization' not in page.locator('#curl').text_content()


def test_a_bad_value_shows_the_error_code_and_message(page):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        submit(page, 'create-form', name='Rex', categoryId='three')
        expect(page.locator('#status')).to_have_text('400 Bad Request')
        expect(page.locator('#error')).to_contain_text('invalid_body: categoryId must be an int64')
        assert len(server.app.store) == 0


def test_with_admin_the_requests_appear_as_they_arrive(page):
    with stub.serve() as server:  # serve() has the admin endpoints on
        page.goto(origin(server) + '/')
        expect(page.locator('#admin')).to_be_visible()
        requests.get(server.url + '/pets?limit=7', headers=server.headers, timeout=10)
        tick(page)
        expect(page.locator('#journal')).to_contain_text('GET /v1/pets?limit=7')
        submit(page, 'fault-form', fault='503', route='listPets')
        expect(page.locator('#fault-result')).to_have_text('queued: the next listPets request gets it')
        submit(page, 'list-form')
        expect(page.locator('#status')).to_have_text('503 Service Unavailable')
        page.locator('#reset').click()
        expect(page.locator('#journal tbody tr')).to_have_count(0)


def test_an_admin_button_without_the_key_shows_the_401_and_changes_nothing(page):
    with stub.serve(fixtures=True) as server:
        page.goto(origin(server) + '/')
        expect(page.locator('#pets-table tbody tr')).to_have_count(13)
        page.locator('#clear-key').click()
        page.locator('#reset').click()
        expect(page.locator('#admin-result')).to_have_text(
            'not reset: 401 Unauthorized (unauthorized): send the API key as Authorization: '
            'Bearer <key>')
        expect(page.locator('#pets-table tbody tr')).to_have_count(13)
        expect(page.locator('#pets-source')).to_have_text('(the last list: the first 20)')
        expect(page.locator('#journal-status')).to_contain_text(
            'not being refreshed: 401 Unauthorized (unauthorized)')
        page.locator('#demo-key').click()
        page.locator('#load-demo').click()
        expect(page.locator('#admin-result')).to_have_text(
            'not loaded: 409 Conflict (store_not_empty): the store already holds 13 pets; '
            'fixtures go into an empty store only: reset it first')
        expect(page.locator('#journal-status')).to_be_hidden()
        assert len(server.app.store) == 13


def test_every_fault_row_in_the_journal_is_marked(page):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        for fault in ('truncate', 'malformed', 503):
            server.fail_next(fault)
            with contextlib.suppress(requests.RequestException):  # the truncated body
                requests.get(server.url + '/pets', headers=server.headers, timeout=10)
        tick(page)
        expect(page.locator('#journal tbody tr')).to_have_count(4)  # the page's own list too
        expect(page.locator('#journal tbody tr.fail')).to_have_count(3)
        expect(page.locator('#journal tbody tr:not(.fail)')).not_to_contain_text('fault')


def test_two_refreshes_under_way_at_once_show_each_new_request_once(page):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        rows = page.locator('#journal tbody tr')
        expect(rows).to_have_count(1)  # the page's own list
        requests.get(server.url + '/pets?limit=5', headers=server.headers, timeout=10)
        page.evaluate('Promise.all([refreshJournal(), refreshJournal()])')  # a slow one, overtaken
        assert rows.count() == 2


def test_the_page_asks_only_for_new_requests_and_follows_a_reset_from_a_test(page):
    with stub.serve() as server:
        asked = []
        page.on('request', lambda request: asked.append(request.url))
        page.goto(origin(server) + '/')
        expect(page.locator('#journal tbody tr')).to_have_count(1)  # the page's own list
        for limit in (1, 2):
            requests.get(f'{server.url}/pets?limit={limit}', headers=server.headers, timeout=10)
        tick(page)
        expect(page.locator('#journal tbody tr')).to_have_count(3)
        requests.get(server.url + '/pets?limit=3', headers=server.headers, timeout=10)
        tick(page)
        expect(page.locator('#journal tbody tr').first).to_contain_text('limit=3')
        assert any(url.endswith('/__admin/requests?since=2') for url in asked)  # from entry 3 on
        server.reset()
        tick(page)
        expect(page.locator('#journal tbody tr')).to_have_count(0)
        requests.get(server.url + '/pets?limit=4', headers=server.headers, timeout=10)
        tick(page)
        expect(page.locator('#journal tbody tr')).to_have_count(1)
        expect(page.locator('#journal tbody tr').first).to_contain_text('limit=4')


def test_the_page_needs_nothing_from_elsewhere_and_no_key_when_not_on_offer(page):
    with stub.serve(api_keys=['private-key']) as server:
        fetched = []
        page.on('request', lambda request: fetched.append(request.url))
        page.goto(origin(server) + '/')
        expect(page.locator('#api-key')).to_have_value('')
        expect(page.locator('#key-hint')).to_contain_text('paste it above')
        expect(page.locator('#admin')).to_be_visible()
        assert fetched and all(url.startswith(origin(server)) for url in fetched)
        assert 'private-key' not in page.content()


def test_an_answer_cut_short_or_not_json_is_shown_as_such(page):
    with stub.serve(fixtures=True) as server:
        page.goto(origin(server) + '/')
        expect(page.locator('#pets-table tbody tr')).to_have_count(13)
        server.fail_next('truncate')
        submit(page, 'list-form')
        expect(page.locator('#status')).to_have_text('200 OK, but the body was cut short')
        expect(page.locator('#error')).to_contain_text('fewer bytes came than the Content-Length')
        server.fail_next('malformed')
        submit(page, 'list-form')
        expect(page.locator('#status')).to_have_text('200 OK')
        expect(page.locator('#error')).to_contain_text('not JSON')


def test_numbers_go_as_typed_and_dates_are_read_out(page):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        submit(page, 'create-form', name='Max', categoryId='9223372036854775807')
        expect(page.locator('#status')).to_have_text('201 Created')
        server.assert_called('createPet', json={'name': 'Max', 'categoryId': 2 ** 63 - 1})
        submit(page, 'get-form', petId='1')
        expect(page.locator('#response-headers tr.note', has_text='deprecation')).to_contain_text(
            'deprecated (RFC 9745), since 01 Jan 2026')


def test_a_cleared_key_can_be_put_back(page):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        expect(page.locator('#demo-key')).to_be_hidden()
        page.locator('#clear-key').click()
        expect(page.locator('#key-hint')).to_contain_text('No key')
        page.locator('#demo-key').click()
        expect(page.locator('#api-key')).to_have_value(stub.DEMO_API_KEY)


def test_a_hostile_name_is_shown_as_sent_and_a_long_one_wraps(page):
    with stub.serve() as server:
        server.add_pet('\u202egnp.exe Bob', 1)
        server.add_pet('<img src=x onerror=alert(1)>', 1)
        server.add_pet('R' * 20_000, 1)
        dialogs = []
        page.on('dialog', lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(origin(server) + '/')
        names = page.locator('#pets-table tbody td:nth-child(2)')
        expect(names).to_have_count(3)
        assert names.nth(0).text_content() == '\\u202egnp.exe Bob'
        assert names.nth(1).text_content() == '<img src=x onerror=alert(1)>'
        assert page.evaluate('document.documentElement.scrollWidth <= window.innerWidth')
        assert dialogs == []



def test_the_page_runs_whole_under_its_content_security_policy(page):
    with stub.serve(fixtures=True) as server:
        refusals = []
        page.on('console', lambda message: refusals.append(message.text)
                if 'Content Security Policy' in message.text else None)
        page.goto(origin(server) + '/')
        expect(page.locator('#pets-table tbody tr')).to_have_count(13)  # its script ran
        assert page.evaluate('getComputedStyle(document.body).margin') == '0px'  # its style
        submit(page, 'create-form', name='Pip', categoryId='3')
        expect(page.locator('#status')).to_have_text('201 Created')  # fetch() to its origin
        page.locator('#reset').click()  # an admin endpoint, from its own origin
        expect(page.locator('#pets-table tbody tr')).to_have_count(0)
        assert refusals == []


@pytest.mark.parametrize('injection', [
    pytest.param("const script = document.createElement('script');"
                 "script.textContent = 'window.injected = true';"
                 'document.body.append(script);', id='a script element'),
    pytest.param("document.body.insertAdjacentHTML('beforeend',"
                 "'<img src=/nothing onerror=\"window.injected = true\">');",
                 id='an event handler attribute'),
])
def test_a_script_injected_into_the_page_does_not_run(page, injection):
    with stub.serve() as server:
        page.goto(origin(server) + '/')
        # Playwright's own evaluation is exempt from the policy; what it injects is not.
        violated = page.evaluate(f"""() => new Promise(resolve => {{
            document.addEventListener('securitypolicyviolation',
                                      event => resolve(event.violatedDirective), {{once: true}});
            {injection}
        }})""")
        assert violated.startswith('script-src')
        assert page.evaluate('window.injected') is None


def test_the_page_is_framed_nowhere(page):
    with stub.serve() as server:
        with page.expect_console_message(lambda message: "frame-ancestors 'none'" in message.text):
            page.set_content(f'<iframe src="{origin(server)}/"></iframe>')  # about:blank
        frame = page.frames[1]
        frame.wait_for_url('chrome-error://**')  # the browser's error page in its place
        assert frame.locator('#base-url').count() == 0
