"""A real SMTP server on loopback for the email channel's tests: aiosmtpd (PyPI), with
STARTTLS or implicit TLS on a test certificate, AUTH PLAIN/LOGIN, chosen replies, or a
server that accepts connections and never answers.

    python3 smtp_server.py --dir DIR [--mode starttls|tls|plain|hang] [--cert C --key K]
                           [--user U --password P] [--rcpt-reply '550 ...'] [--data-reply '451 ...']
                           [--pipelining] [--data-command-reply '451 ...']

Prints "READY <port>" once it listens; writes each message it accepts to DIR/<n>.json as
{"from", "to", "data"} (data as sent, decoded as Latin-1 so every byte survives), and the
number of connections it saw to DIR/connections. With --pipelining it offers PIPELINING and
notes whether each message's DATA came with its RCPT. With --data-command-reply it refuses
the first DATA command of its life with that reply, MAIL and RCPT taken.
"""
import argparse, asyncio, json, os, socket, ssl, sys, threading, time

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import SMTP, AuthResult, LoginPassword

parser = argparse.ArgumentParser()
parser.add_argument('--dir', required=True)
parser.add_argument('--mode', default='starttls', choices=['starttls', 'tls', 'plain', 'hang'])
parser.add_argument('--cert')
parser.add_argument('--key')
parser.add_argument('--user')
parser.add_argument('--password')
parser.add_argument('--rcpt-reply')
parser.add_argument('--data-reply')
parser.add_argument('--pipelining', action='store_true', help='offer PIPELINING (RFC 2920) in EHLO')
parser.add_argument('--data-command-reply', help='the reply to the first DATA command (after MAIL and RCPT were taken)')
args = parser.parse_args()


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


port = free_port()
count = {'messages': 0, 'connections': 0}
lock = threading.Lock()


class Handler:
    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        session.host_name = hostname
        if args.pipelining:
            responses.insert(len(responses) - 1, '250-PIPELINING')
        return responses

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        # Pipelined (RFC 2920): DATA arrived with the RCPT, before its reply was sent.
        session.pipelined = b'DATA' in bytes(getattr(server._reader, '_buffer', b''))
        if args.rcpt_reply:
            return args.rcpt_reply
        envelope.rcpt_tos.append(address)
        return '250 OK'

    async def handle_DATA(self, server, session, envelope):
        if args.data_reply:
            return args.data_reply
        with lock:
            count['messages'] += 1
            n = count['messages']
        path = os.path.join(args.dir, '%d.json' % n)
        with open(path + '.tmp', 'w') as out:
            json.dump({'from': envelope.mail_from, 'to': envelope.rcpt_tos,
                       'data': envelope.original_content.decode('latin-1'),
                       'tls': server.transport.get_extra_info('ssl_object') is not None,
                       'auth': bool(session.authenticated), 'pipelined': getattr(session, 'pipelined', False)}, out)
        os.rename(path + '.tmp', path)
        return '250 2.0.0 accepted'


def authenticator(server, session, envelope, mechanism, auth_data):
    ok = isinstance(auth_data, LoginPassword) and auth_data.login == args.user.encode() \
        and auth_data.password == args.password.encode()
    return AuthResult(success=ok, handled=False)


class RefusingData(SMTP):
    """Refuses the first DATA command with --data-command-reply, its MAIL and RCPT taken: the
    transaction stays open (a MAIL before RSET is a nested MAIL, 503), as RFC 5321 has it."""
    refused = False

    async def smtp_DATA(self, arg):
        if args.data_command_reply and not RefusingData.refused and self.envelope.rcpt_tos:
            RefusingData.refused = True
            await self.push(args.data_command_reply)
            return
        await super().smtp_DATA(arg)


class Counting(Controller):
    def factory(self):
        with lock:
            count['connections'] += 1
        with open(os.path.join(args.dir, 'connections'), 'w') as out:
            out.write(str(count['connections']))
        if args.data_command_reply:
            return RefusingData(self.handler, **self.SMTP_kwargs)
        return super().factory()


if args.mode == 'hang':
    async def hang(reader, writer):
        await asyncio.sleep(3600)

    async def main():
        server = await asyncio.start_server(hang, '127.0.0.1', port)
        print('READY %d' % port, flush=True)
        async with server:
            await server.serve_forever()
    asyncio.run(main())
    sys.exit(0)

context = None
if args.cert:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(args.cert, args.key)

kwargs = dict(hostname='127.0.0.1', port=port, decode_data=False)
if args.user:
    kwargs.update(authenticator=authenticator, auth_required=True, auth_require_tls=args.mode != 'plain')
if args.mode == 'starttls':
    kwargs.update(tls_context=context, require_starttls=True)
elif args.mode == 'tls':
    kwargs.update(ssl_context=context, server_hostname='localhost')
controller = Counting(Handler(), **kwargs)
controller.start()
print('READY %d' % port, flush=True)
try:
    while True:
        time.sleep(3600)
finally:
    controller.stop()
