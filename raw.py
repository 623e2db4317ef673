import socket, sys
def raw(data, label):
    s = socket.create_connection(('127.0.0.1', 8200)); s.settimeout(5)
    try:
        s.sendall(data)
    except OSError as e:
        print(label, 'send error', e)
    out = b''
    try:
        while True:
            c = s.recv(65536)
            if not c: break
            out += c
    except (socket.timeout, ConnectionResetError) as e:
        out += f' <{type(e).__name__}>'.encode()
    s.close()
    head, _, body = out.partition(b'\r\n\r\n')
    lines = head.split(b'\r\n')
    print('==', label); print(lines[0].decode(errors='replace'), [l.decode() for l in lines[1:] if l.lower().startswith((b'content-type', b'connection', b'allow'))]); print(body[:200].decode(errors='replace'))
K = b'Authorization: Bearer petstore-demo-key\r\n'
raw(b'get /v1/pets HTTP/1.1\r\nHost: x\r\n' + K + b'\r\n', 'lowercase method')
raw(b'POST /v1/pets HTTP/1.1\r\nHost: x\r\n' + K + b'Content-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 'CL+TE')
raw(b'GET /v1/pets HTTP/1.1\r\n' + K + b'\r\n', 'no Host')
raw(b'GET /v1/pets HTTP/2.0\r\nHost: x\r\n' + K + b'\r\n', 'HTTP/2.0')
raw(b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'h2 preface')
raw(b'POST /v1/pets HTTP/1.1\r\nHost: x\r\n' + K + b'Content-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n', 'TE gzip')
raw(b'GET /v1/pets HTTP/1.1\r\nHost: x\r\n' + K + b'X-Big: ' + b'a'*(300*1024) + b'\r\n\r\n', '431 headers 300KiB')
raw(b'POST /v1/pets HTTP/1.1\r\nHost: x\r\n' + K + b'Content-Type: application/json\r\nContent-Length: 100000000\r\n\r\n', 'CL 100MB')
raw(b'GET /v1/pe#ts HTTP/1.1\r\nHost: x\r\n' + K + b'\r\n', '# in target')
raw(b'GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-A: a\x01b\r\n' + K + b'\r\n', 'ctl in header')
