#!/usr/bin/python3
'''Conformance check of bluez_mediaroute.py: a client that does what a Bluetooth driver does on
BlueZ's D-Bus API (agent, A2DP source endpoint, player, discovery, pairing of every kind,
connecting, acquiring, volume, buttons, the device and the adapter going away) and checks that the
stand-in answers as bluetoothd does.

    /usr/bin/python3 check_template.py                 # starts its own bus and stand-in
    /usr/bin/python3 check_template.py --address ADDR  # against a running stand-in (PrivateBlueZ)

Exits 0 when every check passed; otherwise prints the first failure and exits 1. Every wait is
bounded. Needs the system python (dbus, dbusmock, gi).
'''

import argparse
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

A2DP_SOURCE = '0000110a-0000-1000-8000-00805f9b34fb'
A2DP_SINK = '0000110b-0000-1000-8000-00805f9b34fb'
ADAPTER = '/org/bluez/hci0'
TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'bluez_mediaroute.py')
# SBC (A2DP §4.3.2): 44.1 kHz joint stereo, 16 blocks, 8 subbands, loudness, bitpool 2-53.
GOOD_CONFIGURATION = [0x21, 0x15, 2, 53]


class Failure(Exception):
    pass


def device_path(address):
    return ADAPTER + '/dev_' + address.replace(':', '_')


def wait_until(predicate, what, timeout=5.0):
    '''Runs the main loop until predicate() holds; a Failure naming `what` after `timeout` s.'''
    deadline = time.monotonic() + timeout
    context = GLib.MainContext.default()
    tick = GLib.timeout_add(50, lambda: True)  # wakes the loop to look at the clock
    try:
        while not predicate():
            if time.monotonic() > deadline:
                raise Failure('timed out after %.1f s waiting for %s' % (timeout, what))
            context.iteration(True)
    finally:
        GLib.source_remove(tick)


def call(method, *args, timeout=10.0, **keywords):
    '''Calls a proxy method without blocking the loop (our agent, endpoint and player must answer
    the stand-in meanwhile); returns its result or raises its DBusException.'''
    outcome = {}
    method(*args, reply_handler=lambda *result: outcome.setdefault('ok', result),
           error_handler=lambda error: outcome.setdefault('error', error), timeout=timeout, **keywords)
    wait_until(lambda: outcome, 'the answer to %s' % method._method_name, timeout + 1)
    if 'error' in outcome:
        raise outcome['error']
    result = outcome['ok']
    return result[0] if len(result) == 1 else (result if result else None)


def expect_error(name, method, *args, **keywords):
    try:
        call(method, *args, **keywords)
    except dbus.exceptions.DBusException as error:
        if error.get_dbus_name() != name:
            raise Failure('%s: expected %s, got %s (%s)' % (method._method_name, name, error.get_dbus_name(), error.get_dbus_message()))
        return error
    raise Failure('%s: expected %s, it succeeded' % (method._method_name, name))


def check(condition, message):
    if not condition:
        raise Failure(message)


class Agent(dbus.service.Object):
    '''org.bluez.Agent1 as a driver exports it. `answer` is what the person answers: a value, an
    exception name to raise, or None to hold the request (the person has not answered yet).'''
    IFACE = 'org.bluez.Agent1'

    def __init__(self, bus, path):
        super().__init__(bus, path)
        self.calls = []
        self.answer = None
        self.held = None

    def reply(self, name, args, ok, fail):
        self.calls.append((name,) + tuple(args))
        if self.answer is None:
            self.held = (ok, fail)
        elif isinstance(self.answer, str) and self.answer.startswith('org.bluez.Error.'):
            fail(dbus.exceptions.DBusException('the person said no', name=self.answer))
        elif self.answer == 'void':
            ok()
        else:
            ok(self.answer)

    @dbus.service.method(IFACE, in_signature='o', out_signature='u', async_callbacks=('ok', 'fail'))
    def RequestPasskey(self, device, ok, fail):
        self.reply('RequestPasskey', [device], ok, fail)

    @dbus.service.method(IFACE, in_signature='o', out_signature='s', async_callbacks=('ok', 'fail'))
    def RequestPinCode(self, device, ok, fail):
        self.reply('RequestPinCode', [device], ok, fail)

    @dbus.service.method(IFACE, in_signature='ou', out_signature='', async_callbacks=('ok', 'fail'))
    def RequestConfirmation(self, device, passkey, ok, fail):
        self.reply('RequestConfirmation', [device, int(passkey)], ok, fail)

    @dbus.service.method(IFACE, in_signature='ouq', out_signature='', async_callbacks=('ok', 'fail'))
    def DisplayPasskey(self, device, passkey, entered, ok, fail):
        self.reply('DisplayPasskey', [device, int(passkey), int(entered)], ok, fail)

    @dbus.service.method(IFACE, in_signature='', out_signature='')
    def Cancel(self):
        self.calls.append(('Cancel',))
        self.held = None

    @dbus.service.method(IFACE, in_signature='', out_signature='')
    def Release(self):
        self.calls.append(('Release',))


class Endpoint(dbus.service.Object):
    '''org.bluez.MediaEndpoint1, an A2DP source for SBC. `configuration` is what it selects.'''
    IFACE = 'org.bluez.MediaEndpoint1'

    def __init__(self, bus, path):
        super().__init__(bus, path)
        self.calls = []
        self.configuration = GOOD_CONFIGURATION

    @dbus.service.method(IFACE, in_signature='ay', out_signature='ay')
    def SelectConfiguration(self, capabilities):
        self.calls.append(('SelectConfiguration', list(bytes(capabilities))))
        return dbus.Array(self.configuration, signature='y')

    @dbus.service.method(IFACE, in_signature='oa{sv}', out_signature='')
    def SetConfiguration(self, transport, properties):
        self.calls.append(('SetConfiguration', str(transport), dict(properties)))

    @dbus.service.method(IFACE, in_signature='o', out_signature='')
    def ClearConfiguration(self, transport):
        self.calls.append(('ClearConfiguration', str(transport)))

    @dbus.service.method(IFACE, in_signature='', out_signature='')
    def Release(self):
        self.calls.append(('Release',))


class Player(dbus.service.Object):
    '''org.bluez.MediaPlayer1 as registered with Media1.RegisterPlayer: the device's buttons.'''
    IFACE = 'org.bluez.MediaPlayer1'

    def __init__(self, bus, path):
        super().__init__(bus, path)
        self.calls = []

    def pressed(self, name):
        self.calls.append(name)

    @dbus.service.method(IFACE)
    def Play(self):
        self.pressed('Play')

    @dbus.service.method(IFACE)
    def Pause(self):
        self.pressed('Pause')

    @dbus.service.method(IFACE)
    def Stop(self):
        self.pressed('Stop')

    @dbus.service.method(IFACE)
    def Next(self):
        self.pressed('Next')

    @dbus.service.method(IFACE)
    def Previous(self):
        self.pressed('Previous')


class Signals:
    '''Every PropertiesChanged and InterfacesAdded/Removed from org.bluez, in order.'''

    def __init__(self, bus):
        self.seen = []
        for member in ('PropertiesChanged', 'InterfacesAdded', 'InterfacesRemoved'):
            bus.add_signal_receiver(self.record, member, sender_keyword='sender', path_keyword='path', member_keyword='member',
                                    bus_name='org.bluez')

    def record(self, *args, sender=None, path=None, member=None):
        self.seen.append((member, str(path), args))

    def mark(self):
        return len(self.seen)

    def changed(self, since, path, interface, name):
        '''Values `name` took on `path` (PropertiesChanged on `interface`) since `since`.'''
        return [args[1][name] for (member, at, args) in self.seen[since:]
                if member == 'PropertiesChanged' and at == path and args[0] == interface and name in args[1]]

    def wait_changed(self, since, path, interface, name, value):
        wait_until(lambda: value in self.changed(since, path, interface, name),
                   'PropertiesChanged %s.%s = %r on %s' % (interface, name, value, path))

    def added(self, since, interface):
        return [(str(args[0]), args[1][interface]) for (member, _, args) in self.seen[since:]
                if member == 'InterfacesAdded' and interface in args[1]]

    def removed(self, since, interface):
        return [str(args[0]) for (member, _, args) in self.seen[since:] if member == 'InterfacesRemoved' and interface in args[1]]


class Check:
    def __init__(self, address):
        self.address = address
        self.bus = dbus.bus.BusConnection(address)
        self.signals = Signals(self.bus)
        self.agent = Agent(self.bus, '/test/agent')
        self.endpoint = Endpoint(self.bus, '/test/endpoint')
        self.player = Player(self.bus, '/test/player')
        self.steps = 0

    def obj(self, path, interface, bus=None):
        return dbus.Interface((bus or self.bus).get_object('org.bluez', path, introspect=False), interface)

    def mock(self, method, *args):
        return call(getattr(self.obj('/', 'org.bluez.Mock'), method), *args)

    def prop(self, path, interface, name):
        return call(self.obj(path, 'org.freedesktop.DBus.Properties').Get, interface, name)

    def set_prop(self, path, interface, name, value):
        return call(self.obj(path, 'org.freedesktop.DBus.Properties').Set, interface, name, value)

    def step(self, what):
        self.steps += 1
        print('ok %d - %s' % (self.steps, what), flush=True)

    def run(self):
        self.adapter_and_discovery()
        self.devices()
        self.agents()
        self.pairing()
        self.media()
        self.transport()
        self.going_away()
        self.owner_leaving()
        self.adapter_off()

    def adapter_and_discovery(self):
        since = self.signals.mark()
        check(self.mock('AddAdapter', 'hci0', 'Test Laptop') == ADAPTER, 'AddAdapter returns the adapter path')
        wait_until(lambda: any(path == ADAPTER for path, _ in self.signals.added(since, 'org.bluez.Adapter1')), 'InterfacesAdded of hci0')
        objects = call(self.obj('/', 'org.freedesktop.DBus.ObjectManager').GetManagedObjects)
        check('org.bluez.Media1' in objects[ADAPTER] and objects[ADAPTER]['org.bluez.Adapter1']['Powered'], 'hci0 powered, with Media1')
        adapter = self.obj(ADAPTER, 'org.bluez.Adapter1')
        expect_error('org.bluez.Error.Failed', adapter.StopDiscovery)
        call(adapter.SetDiscoveryFilter, dbus.Dictionary({'UUIDs': dbus.Array([A2DP_SINK], signature='s'), 'Transport': 'bredr'}, signature='sv'))
        since = self.signals.mark()
        call(adapter.StartDiscovery)
        self.signals.wait_changed(since, ADAPTER, 'org.bluez.Adapter1', 'Discovering', True)
        expect_error('org.bluez.Error.InProgress', adapter.StartDiscovery)
        call(adapter.StopDiscovery)
        self.signals.wait_changed(since, ADAPTER, 'org.bluez.Adapter1', 'Discovering', False)
        expect_error('org.freedesktop.DBus.Error.PropertyReadOnly', self.obj(ADAPTER, 'org.freedesktop.DBus.Properties').Set,
                     'org.bluez.Adapter1', 'Discovering', True)
        self.step('adapter, discovery per client: InProgress twice, Failed without start, Discovering changes and is read-only')

    def devices(self):
        since = self.signals.mark()
        kinds = [('AA:BB:CC:00:00:01', 'Passkey Phones', 'audio-headphones', 'passkey', '123456'),
                 ('AA:BB:CC:00:00:02', 'Passkey Wrong', 'audio-headphones', 'passkey', '123456'),
                 ('AA:BB:CC:00:00:03', 'Old Speaker', 'audio-card', 'pin', '0000'),
                 ('AA:BB:CC:00:00:04', 'Car Kit', 'car-audio', 'confirm', '654321'),
                 ('AA:BB:CC:00:00:05', 'Car Kit Rejected', 'car-audio', 'confirm', '111111'),
                 ('AA:BB:CC:00:00:06', 'Keypad Speaker', 'audio-card', 'display-passkey', '246810'),
                 ('AA:BB:CC:00:00:07', 'Simple Speaker', 'audio-card', 'just-works', ''),
                 ('AA:BB:CC:00:00:08', 'Cancelled Headset', 'audio-headset', 'passkey', '999999')]
        for (address, alias, icon, pairing, code) in kinds:
            check(self.mock('AddAudioDevice', 'hci0', address, alias, icon, pairing, code) == device_path(address), 'AddAudioDevice path')
        self.mock('AddOtherDevice', 'hci0', 'AA:BB:CC:00:00:F1', 'A Phone', 'phone')
        added = dict(self.signals.added(since, 'org.bluez.Device1'))
        check(len(added) == len(kinds) + 1, 'InterfacesAdded for every device')
        phones = added[device_path('AA:BB:CC:00:00:01')]
        check(phones['Icon'] == 'audio-headphones' and phones['Class'] == 0x240418 and A2DP_SINK in phones['UUIDs']
              and not phones['Paired'] and not phones['Connected'] and not phones['Trusted'] and 'RSSI' in phones, 'headphones as BlueZ lists them')
        car = added[device_path('AA:BB:CC:00:00:04')]
        check(car['Icon'] == 'audio-card' and car['Class'] == 0x240420, 'car audio: audio-card icon, car audio class')
        phone = added[device_path('AA:BB:CC:00:00:F1')]
        check(phone['Icon'] == 'phone' and A2DP_SINK not in phone['UUIDs'], 'a phone is no A2DP sink')
        expect_error('org.freedesktop.DBus.Error.UnknownObject', self.obj(device_path('AA:BB:CC:00:00:99'), 'org.bluez.Device1').Pair)
        self.step('audio devices and a phone added with InterfacesAdded; UnknownObject for a missing one')

    def agents(self):
        manager = self.obj('/org/bluez', 'org.bluez.AgentManager1')
        call(manager.RegisterAgent, '/test/agent', 'KeyboardDisplay')
        expect_error('org.bluez.Error.AlreadyExists', manager.RegisterAgent, '/test/agent2', 'KeyboardDisplay')
        call(manager.RequestDefaultAgent, '/test/agent')
        expect_error('org.bluez.Error.DoesNotExist', manager.RequestDefaultAgent, '/test/other')
        other = dbus.bus.BusConnection(self.address)
        expect_error('org.bluez.Error.InvalidArguments', self.obj('/org/bluez', 'org.bluez.AgentManager1', other).RegisterAgent,
                     '/test/agent', 'Telepathy')
        expect_error('org.bluez.Error.DoesNotExist', self.obj('/org/bluez', 'org.bluez.AgentManager1', other).UnregisterAgent, '/test/agent')
        other.close()
        self.step('agent registered per connection: AlreadyExists, InvalidArguments, DoesNotExist')

    def pair(self, address, answer, error=None):
        self.agent.calls.clear()
        self.agent.answer = answer
        since = self.signals.mark()
        device = self.obj(device_path(address), 'org.bluez.Device1')
        if error:
            expect_error(error, device.Pair, timeout=5)
            check(not self.prop(device_path(address), 'org.bluez.Device1', 'Paired'), address + ' stays unpaired')
        else:
            call(device.Pair, timeout=5)
            self.signals.wait_changed(since, device_path(address), 'org.bluez.Device1', 'Paired', True)
        return list(self.agent.calls)

    def pairing(self):
        path = device_path('AA:BB:CC:00:00:01')
        calls = self.pair('AA:BB:CC:00:00:01', dbus.UInt32(123456))
        check(calls == [('RequestPasskey', path)], 'passkey: RequestPasskey(device), got %r' % calls)
        self.set_prop(path, 'org.bluez.Device1', 'Trusted', True)
        expect_error('org.freedesktop.DBus.Error.PropertyReadOnly', self.obj(path, 'org.freedesktop.DBus.Properties').Set,
                     'org.bluez.Device1', 'Paired', False)
        check(self.prop(path, 'org.bluez.Device1', 'Icon') == 'audio-headphones'
              and self.prop(path, 'org.bluez.Device1', 'Class') == 0x240418, 'pairing keeps Icon and Class')
        expect_error('org.bluez.Error.AlreadyExists', self.obj(path, 'org.bluez.Device1').Pair)
        self.pair('AA:BB:CC:00:00:02', dbus.UInt32(123457), 'org.bluez.Error.AuthenticationFailed')
        self.step('passkey: right code pairs (Icon/Class kept), wrong code AuthenticationFailed, again AlreadyExists')

        calls = self.pair('AA:BB:CC:00:00:03', '1234', 'org.bluez.Error.AuthenticationFailed')
        check(calls == [('RequestPinCode', device_path('AA:BB:CC:00:00:03'))], 'pin: RequestPinCode(device)')
        self.pair('AA:BB:CC:00:00:03', '0000')
        self.step('legacy PIN: wrong AuthenticationFailed, right pairs')

        calls = self.pair('AA:BB:CC:00:00:04', 'void')
        check(calls == [('RequestConfirmation', device_path('AA:BB:CC:00:00:04'), 654321)], 'confirm: RequestConfirmation(device, 654321)')
        self.pair('AA:BB:CC:00:00:05', 'org.bluez.Error.Rejected', 'org.bluez.Error.AuthenticationFailed')
        self.pair('AA:BB:CC:00:00:05', 'org.bluez.Error.Canceled', 'org.bluez.Error.AuthenticationFailed')
        # The agent says Canceled and its owner calls CancelPairing at once (a person pressed
        # Cancel): the cancel arrives before the controller reports the failure.
        self.agent.answer = 'org.bluez.Error.Canceled'
        self.agent.calls.clear()
        device = self.obj(device_path('AA:BB:CC:00:00:05'), 'org.bluez.Device1')
        outcome = {}
        device.Pair(reply_handler=lambda: outcome.setdefault('ok', True), error_handler=lambda e: outcome.setdefault('error', e), timeout=10)
        wait_until(lambda: self.agent.calls, 'RequestConfirmation')
        call(device.CancelPairing)
        wait_until(lambda: outcome, 'Pair to end')
        check(outcome.get('error') is not None and outcome['error'].get_dbus_name() == 'org.bluez.Error.AuthenticationCanceled',
              'agent Canceled then CancelPairing: AuthenticationCanceled, got %r' % outcome)
        check(('Cancel',) not in self.agent.calls, 'no Cancel for a request the agent already answered')
        self.step('confirmation: accepted pairs; agent Rejected or Canceled -> AuthenticationFailed (as bluetoothd), '
                  'AuthenticationCanceled if CancelPairing comes first')

        calls = self.pair('AA:BB:CC:00:00:06', 'void')
        check(calls == [('DisplayPasskey', device_path('AA:BB:CC:00:00:06'), 246810, 0)], 'DisplayPasskey(device, 246810, 0), got %r' % calls)
        calls = self.pair('AA:BB:CC:00:00:07', 'void')
        check(calls == [], 'just works asks no agent')
        self.step('display passkey shown, Just Works without the agent')

        # Cancel while the person has not answered.
        self.agent.calls.clear()
        self.agent.answer = None
        path = device_path('AA:BB:CC:00:00:08')
        device = self.obj(path, 'org.bluez.Device1')
        outcome = {}
        device.Pair(reply_handler=lambda: outcome.setdefault('ok', True), error_handler=lambda e: outcome.setdefault('error', e), timeout=10)
        wait_until(lambda: self.agent.held, 'RequestPasskey held by the agent')
        expect_error('org.bluez.Error.InProgress', device.Pair)
        call(device.CancelPairing)
        wait_until(lambda: outcome, 'Pair to end after CancelPairing')
        check('error' in outcome and outcome['error'].get_dbus_name() == 'org.bluez.Error.AuthenticationCanceled',
              'cancelled Pair: AuthenticationCanceled, got %r' % outcome)
        wait_until(lambda: ('Cancel',) in self.agent.calls, 'the agent told Cancel')
        expect_error('org.bluez.Error.DoesNotExist', device.CancelPairing)
        self.step('CancelPairing during a request: agent Cancel, Pair AuthenticationCanceled')

        manager = self.obj('/org/bluez', 'org.bluez.AgentManager1')
        call(manager.UnregisterAgent, '/test/agent')
        self.pair('AA:BB:CC:00:00:08', None, 'org.bluez.Error.AuthenticationFailed')
        check(self.agent.calls == [], 'no agent asked once unregistered')
        call(manager.RegisterAgent, '/test/agent', 'KeyboardDisplay')
        self.step('no agent registered: a device needing a code fails AuthenticationFailed')

    def media(self):
        media = self.obj(ADAPTER, 'org.bluez.Media1')
        speaker = self.obj(device_path('AA:BB:CC:00:00:07'), 'org.bluez.Device1')
        expect_error('org.bluez.Error.Failed', speaker.Connect)
        expect_error('org.bluez.Error.AuthenticationFailed', self.obj(device_path('AA:BB:CC:00:00:02'), 'org.bluez.Device1').Connect)
        properties = dbus.Dictionary({'UUID': A2DP_SOURCE, 'Codec': dbus.Byte(0),
                                      'Capabilities': dbus.Array([0xFF, 0xFF, 2, 53], signature='y')}, signature='sv')
        expect_error('org.bluez.Error.NotSupported', media.RegisterEndpoint, '/test/endpoint',
                     dbus.Dictionary({'UUID': '0000110d-0000-1000-8000-00805f9b34fb', 'Codec': dbus.Byte(0),
                                      'Capabilities': dbus.Array([0xFF, 0xFF, 2, 53], signature='y')}, signature='sv'))
        call(media.RegisterEndpoint, '/test/endpoint', properties)
        expect_error('org.bluez.Error.AlreadyExists', media.RegisterEndpoint, '/test/endpoint', properties)
        call(media.RegisterPlayer, '/test/player', dbus.Dictionary({'PlaybackStatus': 'stopped'}, signature='sv'))

        # A configuration the sink cannot take (16 kHz) fails the connection and leaves nothing.
        self.endpoint.configuration = [0x81, 0x15, 2, 53]
        since = self.signals.mark()
        error = expect_error('org.bluez.Error.Failed', speaker.Connect)
        check('sampling frequency' in error.get_dbus_message(), 'the failure names the field: ' + error.get_dbus_message())
        check(not self.prop(device_path('AA:BB:CC:00:00:07'), 'org.bluez.Device1', 'Connected'), 'not connected after a bad configuration')
        check(self.signals.added(since, 'org.bluez.MediaTransport1') == [], 'no transport for a bad configuration')
        self.step('Connect: no endpoint Failed, unpaired AuthenticationFailed, a bad configuration Failed; endpoint errors')

        self.endpoint.configuration = GOOD_CONFIGURATION
        self.endpoint.calls.clear()
        since = self.signals.mark()
        call(speaker.Connect)
        transport = device_path('AA:BB:CC:00:00:07') + '/fd1'
        names = [c[0] for c in self.endpoint.calls]
        check(names == ['SelectConfiguration', 'SetConfiguration'], 'Select then SetConfiguration, got %r' % names)
        check(self.endpoint.calls[0][1] == [0x3F, 0xFF, 2, 53], 'SelectConfiguration gets the sink capabilities')
        check(self.endpoint.calls[1][1] == transport, 'SetConfiguration names the transport')
        added = dict(self.signals.added(since, 'org.bluez.MediaTransport1'))
        check(transport in added, 'InterfacesAdded of the transport before Connect returns')
        props = added[transport]
        check(props == self.endpoint.calls[1][2], 'SetConfiguration carries the transport properties')
        expected = {'Device': device_path('AA:BB:CC:00:00:07'), 'UUID': A2DP_SOURCE, 'Codec': 0, 'Configuration': GOOD_CONFIGURATION,
                    'State': 'idle', 'Volume': 64, 'Delay': 1500, 'Endpoint': '/test/endpoint'}
        for name, value in expected.items():
            got = list(bytes(props[name])) if name == 'Configuration' else props[name]
            check(got == value, 'transport %s = %r, expected %r' % (name, got, value))
        self.signals.wait_changed(since, device_path('AA:BB:CC:00:00:07'), 'org.bluez.Device1', 'Connected', True)
        check(self.prop(device_path('AA:BB:CC:00:00:07'), 'org.bluez.Device1', 'Connected'), 'Connected reads back true')
        call(speaker.Connect)
        self.step('Connect: SelectConfiguration(sink caps), transport fd1 added, SetConfiguration, Connected; again succeeds')

    def transport(self):
        path = device_path('AA:BB:CC:00:00:07') + '/fd1'
        transport = self.obj(path, 'org.bluez.MediaTransport1')
        expect_error('org.bluez.Error.NotAvailable', transport.TryAcquire)
        since = self.signals.mark()
        (fd, read_mtu, write_mtu) = call(transport.Acquire)
        ours = socket.socket(fileno=fd.take())
        check((read_mtu, write_mtu) == (672, 895), 'MTUs 672/895, got %d/%d' % (read_mtu, write_mtu))
        check(ours.type == socket.SOCK_SEQPACKET, 'a SOCK_SEQPACKET socket')
        self.signals.wait_changed(since, path, 'org.bluez.MediaTransport1', 'State', 'active')
        expect_error('org.bluez.Error.NotAuthorized', transport.Acquire)
        peer = socket.socket(fileno=self.mock('TransportPeer', 'AA:BB:CC:00:00:07').take())
        packets = [bytes([0x80, 0x60, 0, i]) + bytes(range(i, i + 100)) for i in range(5)]
        for packet in packets:
            ours.send(packet)
        peer.settimeout(2)
        check([peer.recv(2048) for _ in packets] == packets, 'the peer reads each packet as written')
        self.step('Acquire: fd + MTUs 672/895, State active, packets reach TransportPeer; TryAcquire NotAvailable, twice NotAuthorized')

        since = self.signals.mark()
        call(self.obj(path, 'org.bluez.MediaTransport1').Release)
        self.signals.wait_changed(since, path, 'org.bluez.MediaTransport1', 'State', 'idle')
        ours.send(b'last')
        ours.close()
        check(peer.recv(2048) == b'last' and peer.recv(2048) == b'', 'after Release the peer reads what was left, then EOF')
        peer.close()
        self.step('Release: State idle, the peer reads to EOF')

        since = self.signals.mark()
        self.set_prop(path, 'org.bluez.MediaTransport1', 'Volume', dbus.UInt16(100))
        self.signals.wait_changed(since, path, 'org.bluez.MediaTransport1', 'Volume', 100)
        expect_error('org.bluez.Error.InvalidArguments', self.obj(path, 'org.freedesktop.DBus.Properties').Set,
                     'org.bluez.MediaTransport1', 'Volume', dbus.UInt16(128))
        expect_error('org.freedesktop.DBus.Error.PropertyReadOnly', self.obj(path, 'org.freedesktop.DBus.Properties').Set,
                     'org.bluez.MediaTransport1', 'Delay', dbus.UInt16(10))
        self.mock('SetRemoteVolume', 'AA:BB:CC:00:00:07', dbus.UInt16(30))
        self.signals.wait_changed(since, path, 'org.bluez.MediaTransport1', 'Volume', 30)
        check(self.prop(path, 'org.bluez.MediaTransport1', 'Volume') == 30, 'Volume reads back 30')
        self.step('Volume both ways: Set emits PropertiesChanged, 128 InvalidArguments, Delay read-only, the speaker\'s buttons')

        for button in ('Pause', 'Play', 'Next'):
            self.mock('PressButton', 'AA:BB:CC:00:00:07', button)
        wait_until(lambda: self.player.calls == ['Pause', 'Play', 'Next'], 'the player to get Pause, Play, Next')
        self.step('buttons reach the registered player')

    def going_away(self):
        address = 'AA:BB:CC:00:00:07'
        path = device_path(address)
        self.endpoint.calls.clear()
        since = self.signals.mark()
        self.mock('DisconnectDevice', address)
        wait_until(lambda: ('ClearConfiguration', path + '/fd1') in self.endpoint.calls, 'ClearConfiguration(fd1)')
        check(self.signals.removed(since, 'org.bluez.MediaTransport1') == [path + '/fd1'], 'fd1 removed')
        self.signals.wait_changed(since, path, 'org.bluez.Device1', 'Connected', False)
        check(self.prop(path, 'org.bluez.Device1', 'Paired'), 'still paired after going out of range')
        expect_error('org.freedesktop.DBus.Error.UnknownObject', self.obj(path + '/fd1', 'org.bluez.MediaTransport1').Acquire)
        self.step('the device goes away: ClearConfiguration, transport removed, Connected false, still paired')

        since = self.signals.mark()
        call(self.obj(path, 'org.bluez.Device1').Connect)
        check([p for p, _ in self.signals.added(since, 'org.bluez.MediaTransport1')] == [path + '/fd2'], 'back with fd2')
        self.endpoint.calls.clear()
        call(self.obj(path, 'org.bluez.Device1').Disconnect)
        wait_until(lambda: ('ClearConfiguration', path + '/fd2') in self.endpoint.calls, 'ClearConfiguration(fd2)')
        self.signals.wait_changed(since, path, 'org.bluez.Device1', 'Connected', False)
        expect_error('org.bluez.Error.NotConnected', self.obj(path, 'org.bluez.Device1').Disconnect)
        self.step('Connect again (fd2), Disconnect: ClearConfiguration, Connected false; again NotConnected')

        since = self.signals.mark()
        self.mock('RemoveAudioDevice', 'AA:BB:CC:00:00:02')
        check(self.signals.removed(since, 'org.bluez.Device1') == [device_path('AA:BB:CC:00:00:02')], 'InterfacesRemoved of the device')
        self.step('a device leaves the list: InterfacesRemoved')

    def owner_leaving(self):
        '''A driver that exits: bluetoothd forgets its endpoint, and the transport made through it goes.'''
        address = 'AA:BB:CC:00:00:04'
        other = dbus.bus.BusConnection(self.address)
        endpoint = Endpoint(other, '/other/endpoint')
        media = self.obj(ADAPTER, 'org.bluez.Media1')
        call(media.UnregisterEndpoint, '/test/endpoint')
        expect_error('org.bluez.Error.DoesNotExist', media.UnregisterEndpoint, '/test/endpoint')
        call(self.obj(ADAPTER, 'org.bluez.Media1', other).RegisterEndpoint, '/other/endpoint',
             dbus.Dictionary({'UUID': A2DP_SOURCE, 'Codec': dbus.Byte(0), 'Capabilities': dbus.Array([0xFF, 0xFF, 2, 53], signature='y')},
                             signature='sv'))
        since = self.signals.mark()
        call(self.obj(device_path(address), 'org.bluez.Device1').Connect)
        check([c[0] for c in endpoint.calls] == ['SelectConfiguration', 'SetConfiguration'], 'the other connection\'s endpoint used')
        other.close()
        wait_until(lambda: self.signals.removed(since, 'org.bluez.MediaTransport1') == [device_path(address) + '/fd1'],
                   'the transport removed when its endpoint\'s owner left')
        self.signals.wait_changed(since, device_path(address), 'org.bluez.Device1', 'Connected', False)
        expect_error('org.bluez.Error.Failed', self.obj(device_path(address), 'org.bluez.Device1').Connect)
        call(media.RegisterEndpoint, '/test/endpoint',
             dbus.Dictionary({'UUID': A2DP_SOURCE, 'Codec': dbus.Byte(0), 'Capabilities': dbus.Array([0xFF, 0xFF, 2, 53], signature='y')},
                             signature='sv'))
        self.step('an endpoint\'s owner leaves: its transport goes, the device disconnects, Connect finds no endpoint')

    def adapter_off(self):
        address = 'AA:BB:CC:00:00:07'
        path = device_path(address)
        adapter = self.obj(ADAPTER, 'org.bluez.Adapter1')
        call(self.obj(path, 'org.bluez.Device1').Connect)
        call(adapter.StartDiscovery)
        self.endpoint.calls.clear()
        since = self.signals.mark()
        self.set_prop(ADAPTER, 'org.bluez.Adapter1', 'Powered', False)
        self.signals.wait_changed(since, ADAPTER, 'org.bluez.Adapter1', 'Powered', False)
        self.signals.wait_changed(since, ADAPTER, 'org.bluez.Adapter1', 'Discovering', False)
        self.signals.wait_changed(since, path, 'org.bluez.Device1', 'Connected', False)
        wait_until(lambda: any(c[0] == 'ClearConfiguration' for c in self.endpoint.calls), 'ClearConfiguration at power off')
        expect_error('org.bluez.Error.NotReady', adapter.StartDiscovery)
        expect_error('org.bluez.Error.NotReady', self.obj(path, 'org.bluez.Device1').Connect)
        self.set_prop(ADAPTER, 'org.bluez.Adapter1', 'Powered', True)
        call(adapter.StartDiscovery)
        call(adapter.StopDiscovery)
        call(self.obj(path, 'org.bluez.Device1').Connect)
        self.step('adapter off: discovery stops, links drop (ClearConfiguration), NotReady; on again works')


def start_own_bus(directory):
    '''A private dbus-daemon and the stand-in on it, for running this check alone.'''
    config = os.path.join(directory, 'bus.conf')
    address = 'unix:path=' + os.path.join(directory, 'bus.sock')
    with open(config, 'w') as f:
        f.write('<busconfig><type>system</type><listen>%s</listen><auth>EXTERNAL</auth><policy context="default">'
                '<allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/></policy></busconfig>' % address)
    daemon = subprocess.Popen(['dbus-daemon', '--config-file=' + config, '--nofork', '--nopidfile', '--print-address'],
                              stdout=subprocess.PIPE)
    daemon.stdout.readline()
    return daemon, address


def start_mock(address, log):
    environment = dict(os.environ, DBUS_SYSTEM_BUS_ADDRESS=address)
    return subprocess.Popen(['/usr/bin/python3', '-m', 'dbusmock', '--system', '--template', TEMPLATE], env=environment,
                            stdout=log, stderr=log)


def wait_for_bluez(bus, present, timeout=10):
    names = dbus.Interface(bus.get_object('org.freedesktop.DBus', '/org/freedesktop/DBus'), 'org.freedesktop.DBus')
    wait_until(lambda: bool(names.NameHasOwner('org.bluez')) == present, 'org.bluez to be %s' % ('owned' if present else 'gone'), timeout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--address', help='a bus where the stand-in already runs (default: start our own)')
    arguments = parser.parse_args()
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    directory = daemon = mock = log = None
    try:
        address = arguments.address
        if address is None:
            directory = tempfile.mkdtemp(prefix='bluez-check-')
            daemon, address = start_own_bus(directory)
            log = open(os.path.join(directory, 'mock.log'), 'w')
            mock = start_mock(address, log)
            wait_for_bluez(dbus.bus.BusConnection(address), True)
        Check(address).run()
        if mock is not None:
            watcher = dbus.bus.BusConnection(address)
            mock.terminate()
            mock.wait(5)
            wait_for_bluez(watcher, False)
            mock = start_mock(address, log)
            wait_for_bluez(watcher, True)
            objects = call(dbus.Interface(watcher.get_object('org.bluez', '/', introspect=False), 'org.freedesktop.DBus.ObjectManager')
                           .GetManagedObjects)
            check('/org/bluez' in objects and ADAPTER not in objects, 'a fresh bluetoothd has no adapter until AddAdapter')
            print('ok - bluetoothd gone and back', flush=True)
        print('all checks passed', flush=True)
        return 0
    except (Failure, dbus.exceptions.DBusException) as error:
        print('FAILED: %s' % error, flush=True)
        if log is not None:
            log.flush()
            print(open(log.name).read()[-4000:])
        return 1
    finally:
        for process in (mock, daemon):
            if process is not None:
                process.terminate()
                process.wait(5)
        if directory:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
