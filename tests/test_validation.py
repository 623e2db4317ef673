"""The pure validation functions: raw input in, clean value or ApiError out."""

import pytest

import petstore_stub as stub
from petstore_stub import ApiError


def assert_refused(call, status: int, code: str, *words: str) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call()
    error = caught.value
    assert (error.status_code, error.code) == (status, code)
    for word in words:
        assert word in error.message
    return error


# -- limit and status ----------------------------------------------------------

@pytest.mark.parametrize('raw, expected', [
    pytest.param(None, 20, id='absent means 20'),
    pytest.param('1', 1, id='lowest'),
    pytest.param('100', 100, id='highest'),
    pytest.param('007', 7, id='leading zeros'),
])
def test_parse_limit_accepts_1_to_100(raw, expected):
    assert stub.parse_limit(raw) == expected


@pytest.mark.parametrize('raw', [
    pytest.param('0', id='zero'),
    pytest.param('101', id='above 100'),
    pytest.param('-1', id='negative'),
    pytest.param('abc', id='letters'),
    pytest.param('1.5', id='fraction'),
    pytest.param('1e2', id='exponent'),
    pytest.param('', id='empty'),
    pytest.param(' 5', id='space'),
    pytest.param('+5', id='plus sign'),
    pytest.param('٣', id='non-ASCII digit'),
    pytest.param('9' * 30, id='30 digits'),
])
def test_parse_limit_refuses_anything_else(raw):
    assert_refused(lambda: stub.parse_limit(raw), 400, 'invalid_parameter', 'limit', '1 to 100')


@pytest.mark.parametrize('raw', [None, 'available', 'pending', 'sold'])
def test_parse_status_accepts_the_three_statuses(raw):
    assert stub.parse_status(raw) == raw


@pytest.mark.parametrize('raw', ['Available', 'SOLD', 'adopted', '', 'sold '])
def test_parse_status_is_exact_and_case_sensitive(raw):
    assert_refused(lambda: stub.parse_status(raw), 400, 'invalid_parameter', 'status')


def test_parse_list_query_refuses_unknown_parameters():
    assert_refused(lambda: stub.parse_list_query({'limt': ['5']}), 400, 'invalid_parameter', "'limt'")


def test_parse_list_query_refuses_a_repeated_parameter():
    assert_refused(lambda: stub.parse_list_query({'limit': ['5', '6']}), 400, 'invalid_parameter',
                   'limit was given 2 times')


def test_parse_list_query_gives_defaults():
    assert stub.parse_list_query({}) == {'limit': 20, 'status': None}


# -- petId -------------------------------------------------------------------

@pytest.mark.parametrize('raw, expected', [
    ('1', 1), ('42', 42), ('0', 0), ('-5', -5),
    (str(2 ** 63 - 1), 2 ** 63 - 1), (str(-(2 ** 63)), -(2 ** 63)),
])
def test_parse_pet_id_accepts_any_int64(raw, expected):
    assert stub.parse_pet_id(raw) == expected


@pytest.mark.parametrize('raw', [
    pytest.param('abc', id='letters'),
    pytest.param('1.0', id='fraction'),
    pytest.param('1e3', id='exponent'),
    pytest.param('', id='empty'),
    pytest.param(str(2 ** 63), id='above int64'),
    pytest.param(str(-(2 ** 63) - 1), id='below int64'),
    pytest.param('9' * 30, id='30 digits'),
    pytest.param('+1', id='plus sign'),
])
def test_parse_pet_id_refuses_non_int64(raw):
    assert_refused(lambda: stub.parse_pet_id(raw), 400, 'invalid_parameter', 'petId')


# -- the request body ------------------------------------------------------------

@pytest.mark.parametrize('content_type', [
    'application/json', 'application/json; charset=utf-8', 'Application/JSON; charset="UTF-8"',
])
def test_check_content_type_accepts_json(content_type):
    stub.check_content_type(content_type)


@pytest.mark.parametrize('content_type', [
    '', 'text/plain', 'application/x-www-form-urlencoded', 'application/jsonx',
    'application/json; charset=latin-1',
])
def test_check_content_type_refuses_anything_but_json(content_type):
    assert_refused(lambda: stub.check_content_type(content_type), 415, 'unsupported_media_type')


@pytest.mark.parametrize('body, words', [
    pytest.param(b'', ['empty'], id='empty'),
    pytest.param(b'  \n', ['empty'], id='blank'),
    pytest.param(b'{"name": ', ['not valid JSON'], id='truncated'),
    pytest.param(b'{"name": "Rex"} {}', ['not valid JSON'], id='trailing data'),
    pytest.param(b'{"categoryId": NaN}', ['not valid JSON', 'NaN'], id='NaN'),
    pytest.param(b'{"categoryId": Infinity}', ['not valid JSON'], id='Infinity'),
    pytest.param(b'{"name": "a", "name": "b"}', ["'name' appears twice"], id='duplicate key'),
    pytest.param(b'\xff\xfe{}', ['not UTF-8'], id='not UTF-8'),
    pytest.param(b'[{"name": "Rex"}]', ['must be a JSON object', 'list'], id='array'),
    pytest.param(b'"Rex"', ['must be a JSON object'], id='string'),
    pytest.param(b'null', ['must be a JSON object'], id='null'),
])
def test_parse_json_object_refuses_what_is_not_one_json_object(body, words):
    assert_refused(lambda: stub.parse_json_object(body), 400, 'invalid_body', *words)


def test_parse_json_object_reads_utf8():
    assert stub.parse_json_object('{"name": "Chloé 🐈"}'.encode()) == {'name': 'Chloé 🐈'}


@pytest.mark.parametrize('document, expected', [
    pytest.param({'name': 'Rex', 'categoryId': 1}, {'name': 'Rex', 'categoryId': 1},
                 id='no status stays without one'),
    pytest.param({'status': 'sold', 'categoryId': 2, 'name': 'Kiwi'},
                 {'name': 'Kiwi', 'categoryId': 2, 'status': 'sold'}, id='fields in spec order'),
    pytest.param({'name': ' 猫 ', 'categoryId': -(2 ** 63)}, {'name': ' 猫 ', 'categoryId': -(2 ** 63)},
                 id='name kept exactly, lowest int64'),
    pytest.param({'name': 'x', 'categoryId': 2 ** 63 - 1}, {'name': 'x', 'categoryId': 2 ** 63 - 1},
                 id='highest int64'),
])
def test_parse_new_pet_accepts_a_new_pet(document, expected):
    parsed = stub.parse_new_pet(document)
    assert parsed == expected
    assert list(parsed) == list(expected)


@pytest.mark.parametrize('document, words', [
    pytest.param(['Rex', 1], ['a NewPet is a JSON object', '["Rex", 1]'], id='array'),
    pytest.param(None, ['a NewPet is a JSON object', 'null'], id='null document'),
    pytest.param({'categoryId': 1}, ['name is required'], id='missing name'),
    pytest.param({'name': 'Rex'}, ['categoryId is required'], id='missing categoryId'),
    pytest.param({'name': '', 'categoryId': 1}, ['non-empty string'], id='empty name'),
    pytest.param({'name': 7, 'categoryId': 1}, ['name must be'], id='number name'),
    pytest.param({'name': None, 'categoryId': 1}, ['name must be'], id='null name'),
    pytest.param({'name': '\ud800', 'categoryId': 1}, ['surrogate'], id='lone surrogate'),
    pytest.param({'name': 'Rex', 'categoryId': '1'}, ['categoryId', '"1"'], id='numeric string'),
    pytest.param({'name': 'Rex', 'categoryId': 1.0}, ['categoryId'], id='float'),
    pytest.param({'name': 'Rex', 'categoryId': True}, ['categoryId', 'true'], id='boolean'),
    pytest.param({'name': 'Rex', 'categoryId': None}, ['categoryId', 'null'], id='null'),
    pytest.param({'name': 'Rex', 'categoryId': 2 ** 63}, ['int64'], id='above int64'),
    pytest.param({'name': 'Rex', 'categoryId': -(2 ** 63) - 1}, ['int64'], id='below int64'),
    pytest.param({'name': 'Rex', 'categoryId': 1, 'status': 'lost'}, ['status must be'],
                 id='unknown status'),
    pytest.param({'name': 'Rex', 'categoryId': 1, 'status': None}, ['status must be'],
                 id='null status'),
    pytest.param({'name': 'Rex', 'categoryId': 1, 'id': 9}, ["unknown field 'id'"], id='id'),
    pytest.param({'name': 'Rex', 'categoryID': 1}, ["unknown field 'categoryID'"],
                 id='typo categoryID'),
    pytest.param({'name': 'Rex', 'categoryId': 1, 'staus': 'sold'}, ["unknown field 'staus'"],
                 id='typo staus'),
])
def test_parse_new_pet_refuses_what_the_spec_does_not_allow(document, words):
    assert_refused(lambda: stub.parse_new_pet(document), 400, 'invalid_body', *words)


# -- the bearer key --------------------------------------------------------------

@pytest.mark.parametrize('header', [
    'Bearer petstore-demo-key', 'bearer petstore-demo-key', 'BEARER  petstore-demo-key ',
    'Bearer other-key',
])
def test_check_bearer_accepts_any_configured_key_with_any_case_scheme(header):
    stub.check_bearer(header, ['other-key', 'petstore-demo-key'])


@pytest.mark.parametrize('header', [
    pytest.param(None, id='missing'),
    pytest.param('', id='empty header'),
    pytest.param('Bearer', id='no token'),
    pytest.param('Bearer   ', id='blank token'),
    pytest.param('Basic cGV0OnN0b3Jl', id='Basic scheme'),
    pytest.param('petstore-demo-key', id='key without scheme'),
])
def test_check_bearer_without_credentials_is_a_bare_challenge(header):
    error = assert_refused(lambda: stub.check_bearer(header, ['petstore-demo-key']),
                           401, 'unauthorized', 'Bearer')
    assert error.headers['WWW-Authenticate'] == 'Bearer realm="petstore"'


@pytest.mark.parametrize('header', [
    'Bearer wrong', 'Bearer petstore-demo-ke', 'Bearer petstore-demo-key2', 'Bearer Petstore-Demo-Key',
    'Bearer petstore-demo-key\xa0', 'Bearer \xa0petstore-demo-key', 'Bearer petstore-demo-key\x85',
    'Bearer petstore-demo-key\x0b',
])
def test_check_bearer_with_a_wrong_key_says_invalid_token(header):
    error = assert_refused(lambda: stub.check_bearer(header, ['petstore-demo-key']),
                           401, 'invalid_token')
    assert error.headers['WWW-Authenticate'] == 'Bearer realm="petstore", error="invalid_token"'


def test_check_bearer_compares_in_constant_time(monkeypatch):
    compared = []
    real = stub.hmac.compare_digest

    def spy(left, right):
        compared.append(right)
        return real(left, right)

    monkeypatch.setattr(stub.hmac, 'compare_digest', spy)
    stub.check_bearer('Bearer second', ['first', 'second', 'third'])
    assert compared == [b'first', b'second', b'third']
