"""Exercise 3: a cursor for GET /v1/pets, past the first ``limit`` pets.

The spec leaves "pagination controls beyond limit" unshown; this stub adds a cursor:

- ``after=<id>`` lists the pets whose id is greater, in id order, still at most ``limit`` and of
  ``status`` if given. It is a whole number from 0 (0 is the start); anything else is a ``400``,
  as a bad ``limit`` is.
- When more pets follow a page, its answer carries ``Link: </v1/pets?limit=2&after=4>;
  rel="next"``, the query of the next page (with ``status`` too, if given); the last page has no
  ``Link``.
- ``data/openapi.json`` describes the parameter ``after`` and the header ``Link``.

Where to start: ``list_pets()`` in ``create_app()``, ``parse_list_query()``, and
``PetStore.list_json()``, in Part 1."""

import re

from exercises import MAX, REX, check, expect, operation


def next_link(response) -> str | None:
    link = response.headers.get('Link')
    if link is None:
        return None
    found = re.fullmatch(r'<([^>]*)>; rel="next"', link)
    check(found is not None, f'the Link header should read <URL>; rel="next"; it reads {link}')
    assert found is not None  # check() has said why
    return found[1]


def test_following_next_links_lists_every_pet_once_in_id_order(client):
    for pet in [REX, MAX] * 3:
        client.post_json('/v1/pets', pet)
    pages, url = [], '/v1/pets?limit=4'
    while url is not None and len(pages) < 5:
        page = client.get(url, expect_errors=True)
        expect(page, 200, f'GET {url}')
        pages.append([pet['id'] for pet in page.json])
        url = next_link(page)
    check(pages == [[1, 2, 3, 4], [5, 6]], 'with 6 pets, GET /v1/pets?limit=4 and then its Link '
          f'rel="next" should give the pages [[1, 2, 3, 4], [5, 6]]; they gave {pages}')


def test_a_full_last_page_has_no_next_link(client):
    for pet in [REX, MAX]:
        client.post_json('/v1/pets', pet)
    page = client.get('/v1/pets?limit=1&after=1', expect_errors=True)
    expect(page, 200, 'GET /v1/pets?limit=1&after=1')
    check([pet['id'] for pet in page.json] == [2], f'after=1 lists pet 2; it listed {page.json}')
    check(next_link(page) is None, 'no pet follows pet 2, so the page should carry no Link')


def test_the_next_link_keeps_the_status_filter(client):
    for pet in [REX, MAX, REX, REX]:
        client.post_json('/v1/pets', pet)
    page = client.get('/v1/pets?status=available&limit=1&after=1', expect_errors=True)
    expect(page, 200, 'GET /v1/pets?status=available&limit=1&after=1')
    check([pet['id'] for pet in page.json] == [3], f'the 2nd available pet is 3; got {page.json}')
    link = next_link(page)
    check(link is not None and 'status=available' in link and 'after=3' in link,
          f'the next page is of available pets after 3; the Link points at {link}')
    following = client.get(link, expect_errors=True)
    expect(following, 200, f'GET {link}, the Link of the page before')
    check([pet['id'] for pet in following.json] == [4], f'{link} should list pet 4')


def test_after_0_is_the_start_and_an_after_that_is_not_a_whole_number_is_a_400(client):
    client.post_json('/v1/pets', REX)
    start = client.get('/v1/pets?after=0', expect_errors=True)
    expect(start, 200, 'GET /v1/pets?after=0 lists from the first pet')
    check([pet['id'] for pet in start.json] == [1], f'after=0 should list pet 1; got {start.json}')
    for bad in ['-1', 'x', '1.5', '', '9223372036854775808']:
        refused = client.get(f'/v1/pets?after={bad}', expect_errors=True)
        expect(refused, 400, f'GET /v1/pets?after={bad}: after is a whole number from 0')
        check(refused.json['code'] == 'invalid_parameter', f'the 400 has {refused.json}')


def test_the_cursor_is_described_in_the_openapi_document(client):
    described = operation(client, 'get', '/pets')
    names = [parameter.get('name') for parameter in described.get('parameters', [])]
    check('after' in names, f'listPets should describe the parameter "after"; it has {names}')
    headers = described['responses']['200'].get('headers', {})
    check('Link' in headers, 'the 200 of listPets should describe the header "Link"')
