'''BlueZ 5 as bluetoothd presents it on D-Bus, for MediaRoute's Bluetooth tests.

python-dbusmock's `bluez5` template, extended where it falls short of bluetoothd as BlueZ's own
documents describe it (doc/org.bluez.Adapter.rst, Device, AgentManager, Agent, Media,
MediaEndpoint, MediaTransport, MediaPlayer):

- pairing calls the registered Agent1 of the registering connection (RequestPasskey,
  RequestPinCode, RequestConfirmation, DisplayPasskey) without blocking the bus, checks the code,
  and answers AuthenticationFailed / Rejected / Canceled as bluetoothd does; CancelPairing calls
  the agent's Cancel;
- Device1.Connect of an audio sink asks the registered A2DP source endpoint to
  SelectConfiguration from the sink's SBC capabilities, creates the MediaTransport1, hands it over
  with SetConfiguration, and only then reports Connected; Disconnect (or the device going away)
  calls ClearConfiguration and removes the transport;
- MediaTransport1.Acquire returns one end of a SOCK_SEQPACKET socket pair (an L2CAP socket's
  framing); the test reads the other end through Mock.TransportPeer;
- Volume (0-127) both ways; buttons reach the player registered with Media1.RegisterPlayer;
- discovery per client (InProgress, NotReady when powered off), power off disconnects devices.

Load it with: python3 -m dbusmock --system --template bluez_mediaroute.py
'''

import socket

import dbus
import dbus.service
from dbusmock import mockobject
from dbusmock.mockobject import DBusMockObject, objects
from dbusmock.templates import bluez5
from dbusmock.templates.bluez5 import (BUS_NAME, MAIN_OBJ, SYSTEM_BUS, IS_OBJECT_MANAGER,  # noqa: F401 (dbusmock reads these)
                                       ADAPTER_IFACE, DEVICE_IFACE, AGENT_MANAGER_IFACE, MEDIA_IFACE, OBJECT_MANAGER_IFACE,
                                       BLUEZ_MOCK_IFACE, AddDevice, RemoveAdapter, PairDevice)  # noqa: F401 (stock Mock methods kept)

PROFILE_MANAGER_IFACE = 'org.bluez.ProfileManager1'
AGENT_IFACE = 'org.bluez.Agent1'
ENDPOINT_IFACE = 'org.bluez.MediaEndpoint1'
TRANSPORT_IFACE = 'org.bluez.MediaTransport1'
PLAYER_IFACE = 'org.bluez.MediaPlayer1'
A2DP_SOURCE = '0000110a-0000-1000-8000-00805f9b34fb'
A2DP_SINK = '0000110b-0000-1000-8000-00805f9b34fb'
AVRCP_TARGET = '0000110c-0000-1000-8000-00805f9b34fb'
AVRCP_CONTROLLER = '0000110e-0000-1000-8000-00805f9b34fb'
# What a typical sink takes (A2DP §4.3.2): 44.1 and 48 kHz, every channel mode, 4-16 blocks,
# 4 and 8 subbands, SNR and loudness, bitpool 2-53.
DEFAULT_SINK_CAPABILITIES = [0x3F, 0xFF, 2, 53]
# What bluetoothd reports for a BR/EDR A2DP link: read MTU, write MTU.
READ_MTU, WRITE_MTU = 672, 895

# Who registered what: the connection (unique name) and object path bluetoothd calls back.
registered = {'agent': None}
# The mock's main object (the ObjectManager at /), set by load().
main = None


def bluez_error(name, message):
    return dbus.exceptions.DBusException(message, name='org.bluez.Error.' + name)


def bus():
    return main.connection


def changed(obj, interface, values):
    '''Sets properties and emits PropertiesChanged, as bluetoothd does for every change.'''
    obj.props[interface].update(values)
    obj.EmitSignal(dbus.PROPERTIES_IFACE, 'PropertiesChanged', 'sa{sv}as', [interface, values, []])


def interfaces_added(path, interfaces):
    main.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesAdded', 'oa{sa{sv}}', [dbus.ObjectPath(path), interfaces])


def interfaces_removed(path, interfaces):
    main.EmitSignal(OBJECT_MANAGER_IFACE, 'InterfacesRemoved', 'oas', [dbus.ObjectPath(path), interfaces])


def add(cls, path, interface, properties):
    '''Like DBusMockObject.AddObject, with one of the classes below (real methods with callbacks).'''
    obj = cls(main.bus_name, path, interface, properties)
    obj.logfile = main.logfile
    obj.object_manager = main.object_manager
    obj.is_logfile_owner = False
    objects[path] = obj
    return obj


def remove(path):
    obj = objects.pop(path)
    obj.remove_from_connection()


def call(owner, method, args, on_reply=None, on_error=None, signature=None, timeout=120):
    '''Calls back a client object (agent, endpoint, player) without blocking bluetoothd's loop.'''
    (sender, path, interface) = owner[:3]
    bus().call_async(sender, path, interface, method, signature, args,
                     on_reply or (lambda *_: None), on_error or (lambda *_: None), timeout=timeout)


def load(mock, parameters):
    global main
    main = mock
    add(AgentManager, '/org/bluez', AGENT_MANAGER_IFACE, {})
    objects['/org/bluez'].AddMethods(PROFILE_MANAGER_IFACE, [
        ('RegisterProfile', 'osa{sv}', '', ''),
        ('UnregisterProfile', 'o', '', ''),
    ])


class AgentManager(DBusMockObject):
    @dbus.service.method(AGENT_MANAGER_IFACE, in_signature='os', out_signature='', sender_keyword='sender')
    def RegisterAgent(self, path, capability, sender=None):
        if registered['agent'] and registered['agent'][0] == sender and registered['agent'][1] == path:
            raise bluez_error('AlreadyExists', 'Already Exists')
        registered['agent'] = (sender, path, AGENT_IFACE, str(capability))

    @dbus.service.method(AGENT_MANAGER_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
    def RequestDefaultAgent(self, path, sender=None):
        if not registered['agent'] or registered['agent'][:2] != (sender, path):
            raise bluez_error('DoesNotExist', 'Does Not Exist')

    @dbus.service.method(AGENT_MANAGER_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
    def UnregisterAgent(self, path, sender=None):
        if not registered['agent'] or registered['agent'][:2] != (sender, path):
            raise bluez_error('DoesNotExist', 'Does Not Exist')
        registered['agent'] = None


class Adapter(DBusMockObject):
    discovering_clients = None

    @dbus.service.method(ADAPTER_IFACE, in_signature='a{sv}', out_signature='', sender_keyword='sender')
    def SetDiscoveryFilter(self, properties, sender=None):
        if not self.props[ADAPTER_IFACE]['Powered']:
            raise bluez_error('NotReady', 'Resource Not Ready')
        self.filters[sender] = properties

    @dbus.service.method(ADAPTER_IFACE, in_signature='', out_signature='', sender_keyword='sender')
    def StartDiscovery(self, sender=None):
        if not self.props[ADAPTER_IFACE]['Powered']:
            raise bluez_error('NotReady', 'Resource Not Ready')
        if sender in self.clients:
            raise bluez_error('InProgress', 'Operation already in progress')
        self.clients.add(sender)
        if not self.props[ADAPTER_IFACE]['Discovering']:
            changed(self, ADAPTER_IFACE, {'Discovering': dbus.Boolean(True, variant_level=1)})

    @dbus.service.method(ADAPTER_IFACE, in_signature='', out_signature='', sender_keyword='sender')
    def StopDiscovery(self, sender=None):
        if not self.props[ADAPTER_IFACE]['Powered']:
            raise bluez_error('NotReady', 'Resource Not Ready')
        if sender not in self.clients:
            raise bluez_error('Failed', 'No discovery started')
        self.clients.discard(sender)
        if not self.clients:
            changed(self, ADAPTER_IFACE, {'Discovering': dbus.Boolean(False, variant_level=1)})

    @dbus.service.method(ADAPTER_IFACE, in_signature='o', out_signature='')
    def RemoveDevice(self, path):
        device = objects.get(str(path))
        if not isinstance(device, DBusMockObject) or not str(path).startswith(self.path + '/'):
            raise bluez_error('DoesNotExist', 'Does Not Exist')
        if isinstance(device, AudioDevice):
            device.drop_link()
        remove(str(path))
        interfaces_removed(path, [DEVICE_IFACE])

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature='ssv', out_signature='')
    def Set(self, interface, name, value):
        DBusMockObject.Set(self, interface, name, value)
        if interface == ADAPTER_IFACE and name == 'Powered' and not value:
            # Powering off ends discovery and every link (bluetoothd's adapter_stop).
            self.clients.clear()
            if self.props[ADAPTER_IFACE]['Discovering']:
                changed(self, ADAPTER_IFACE, {'Discovering': dbus.Boolean(False, variant_level=1)})
            for obj in list(objects.values()):
                if isinstance(obj, AudioDevice) and obj.path.startswith(self.path + '/'):
                    obj.drop_link()

    @dbus.service.method(MEDIA_IFACE, in_signature='oa{sv}', out_signature='', sender_keyword='sender')
    def RegisterEndpoint(self, path, properties, sender=None):
        key = (sender, str(path))
        if key in self.endpoints:
            raise bluez_error('AlreadyExists', 'Already Exists')
        if str(properties.get('UUID', '')).lower() not in (A2DP_SOURCE, A2DP_SINK) or 'Codec' not in properties:
            raise bluez_error('InvalidArguments', 'Invalid arguments in method call')
        self.endpoints[key] = properties

    @dbus.service.method(MEDIA_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
    def UnregisterEndpoint(self, path, sender=None):
        if self.endpoints.pop((sender, str(path)), None) is None:
            raise bluez_error('DoesNotExist', 'Does Not Exist')

    @dbus.service.method(MEDIA_IFACE, in_signature='oa{sv}', out_signature='', sender_keyword='sender')
    def RegisterPlayer(self, path, properties, sender=None):
        self.players[(sender, str(path))] = properties

    @dbus.service.method(MEDIA_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
    def UnregisterPlayer(self, path, sender=None):
        if self.players.pop((sender, str(path)), None) is None:
            raise bluez_error('DoesNotExist', 'Does Not Exist')

    def source_endpoint(self):
        '''The A2DP source endpoint registered for SBC (codec 0), as (sender, path, interface).'''
        for (sender, path), properties in self.endpoints.items():
            if str(properties['UUID']).lower() == A2DP_SOURCE and int(properties['Codec']) == 0:
                return (sender, path, ENDPOINT_IFACE), bytes(properties.get('Capabilities', []))
        return None, None


class AudioDevice(DBusMockObject):
    '''An A2DP sink (headphones, a speaker) with how it pairs: "passkey", "pin", "confirm",
    "display-passkey" or "just-works", and the code it expects.'''

    def adapter(self):
        return objects[str(self.props[DEVICE_IFACE]['Adapter'])]

    def set(self, values):
        changed(self, DEVICE_IFACE, values)

    @dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='', async_callbacks=('ok', 'fail'))
    def Pair(self, ok, fail):
        if self.props[DEVICE_IFACE]['Paired']:
            return fail(bluez_error('AlreadyExists', 'Already Exists'))
        if self.pairing_callbacks:
            return fail(bluez_error('InProgress', 'In Progress'))
        if self.kind == 'just-works':
            return self.paired(ok)
        agent = registered['agent']
        if agent is None:
            # Without an agent bluetoothd pairs as NoInputNoOutput: a device that needs input fails.
            return fail(bluez_error('AuthenticationFailed', 'Authentication Failed'))
        self.pairing_callbacks = (ok, fail)
        device = dbus.ObjectPath(self.path)
        if self.kind == 'passkey':
            call(agent, 'RequestPasskey', [device], lambda passkey: self.answered('%06d' % int(passkey)), self.agent_failed, 'o')
        elif self.kind == 'pin':
            call(agent, 'RequestPinCode', [device], lambda pin: self.answered(str(pin)), self.agent_failed, 'o')
        elif self.kind == 'confirm':
            call(agent, 'RequestConfirmation', [device, dbus.UInt32(int(self.code))], lambda: self.answered(self.code), self.agent_failed, 'ou')
        elif self.kind == 'display-passkey':
            # The agent shows the number; the person types it on the device, which then completes.
            call(agent, 'DisplayPasskey', [device, dbus.UInt32(int(self.code)), dbus.UInt16(0)],
                 lambda: self.answered(self.code), self.agent_failed, 'ouq')
        else:
            self.pairing_callbacks = None
            fail(bluez_error('Failed', 'unknown pairing kind ' + self.kind))

    def answered(self, code):
        if not self.pairing_callbacks:
            return
        (ok, fail) = self.pairing_callbacks
        self.pairing_callbacks = None
        if code == self.code:
            self.paired(ok)
        else:
            fail(bluez_error('AuthenticationFailed', 'Authentication Failed'))

    def agent_failed(self, error):
        if not self.pairing_callbacks:
            return
        (_, fail) = self.pairing_callbacks
        self.pairing_callbacks = None
        name = error.get_dbus_name()
        if name == 'org.bluez.Error.Rejected':
            fail(bluez_error('AuthenticationRejected', 'Authentication Rejected'))
        elif name == 'org.bluez.Error.Canceled':
            fail(bluez_error('AuthenticationCanceled', 'Authentication Canceled'))
        else:
            fail(bluez_error('AuthenticationFailed', 'Authentication Failed'))

    def paired(self, ok):
        self.set({'Paired': dbus.Boolean(True, variant_level=1), 'Bonded': dbus.Boolean(True, variant_level=1)})
        ok()

    @dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='')
    def CancelPairing(self):
        if not self.pairing_callbacks:
            raise bluez_error('DoesNotExist', 'Does Not Exist')
        (_, fail) = self.pairing_callbacks
        self.pairing_callbacks = None
        if registered['agent']:
            call(registered['agent'], 'Cancel', [], signature='')
        fail(bluez_error('AuthenticationCanceled', 'Authentication Canceled'))

    @dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='', async_callbacks=('ok', 'fail'))
    def Connect(self, ok, fail):
        if not self.adapter().props[ADAPTER_IFACE]['Powered']:
            return fail(bluez_error('NotReady', 'Resource Not Ready'))
        if self.props[DEVICE_IFACE]['Connected'] and self.transport:
            return fail(bluez_error('AlreadyConnected', 'Already Connected'))
        if not self.props[DEVICE_IFACE]['Paired']:
            if self.kind != 'just-works':
                return fail(bluez_error('AuthenticationFailed', 'Authentication Failed'))
            self.set({'Paired': dbus.Boolean(True, variant_level=1), 'Bonded': dbus.Boolean(True, variant_level=1)})
        endpoint, source_capabilities = self.adapter().source_endpoint()
        if endpoint is None:
            return fail(bluez_error('Failed', 'br-connection-profile-unavailable'))

        def selected(configuration):
            configuration = bytes(configuration)
            problem = sbc_problem(configuration, self.sink_capabilities)
            if problem:
                return fail(bluez_error('Failed', 'the endpoint selected an SBC configuration the sink cannot take: ' + problem))
            self.transport_count += 1
            path = self.path + '/fd%d' % self.transport_count
            properties = {
                'Device': dbus.ObjectPath(self.path, variant_level=1),
                'UUID': dbus.String(A2DP_SOURCE, variant_level=1),
                'Codec': dbus.Byte(0, variant_level=1),
                'Configuration': dbus.Array([dbus.Byte(b) for b in configuration], signature='y', variant_level=1),
                'State': dbus.String('idle', variant_level=1),
                'Volume': dbus.UInt16(self.volume, variant_level=1),
                'Delay': dbus.UInt16(1500, variant_level=1),
                'Endpoint': dbus.ObjectPath(endpoint[1], variant_level=1),
            }
            transport = add(Transport, path, TRANSPORT_IFACE, properties)
            transport.device = self
            transport.endpoint = endpoint
            self.transport = transport
            interfaces_added(path, {TRANSPORT_IFACE: properties})

            def configured():
                self.set({'Connected': dbus.Boolean(True, variant_level=1), 'ServicesResolved': dbus.Boolean(True, variant_level=1)})
                ok()

            def refused(error):
                self.drop_link()
                fail(bluez_error('Failed', 'the endpoint refused the configuration: ' + error.get_dbus_message()))
            call(endpoint, 'SetConfiguration', [dbus.ObjectPath(path), properties], configured, refused, 'oa{sv}')

        call(endpoint, 'SelectConfiguration', [dbus.Array([dbus.Byte(b) for b in self.sink_capabilities], signature='y')], selected,
             lambda error: fail(bluez_error('Failed', 'SelectConfiguration failed: ' + error.get_dbus_message())), 'ay')

    @dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='')
    def Disconnect(self):
        if not self.props[DEVICE_IFACE]['Connected']:
            raise bluez_error('NotConnected', 'Not Connected')
        self.drop_link()

    @dbus.service.method(DEVICE_IFACE, in_signature='s', out_signature='')
    def ConnectProfile(self, uuid):
        raise bluez_error('NotSupported', 'Operation is not supported by this stand-in; use Connect')

    def drop_link(self):
        '''The link goes (asked for, out of range, switched off, adapter off): the endpoint is told
        with ClearConfiguration, the transport disappears, and the device says it is not connected.'''
        transport = self.transport
        self.transport = None
        if transport is not None:
            call(transport.endpoint, 'ClearConfiguration', [dbus.ObjectPath(transport.path)], signature='o')
            transport.close()
            remove(transport.path)
            interfaces_removed(transport.path, [TRANSPORT_IFACE])
        if self.props[DEVICE_IFACE]['Connected']:
            self.set({'Connected': dbus.Boolean(False, variant_level=1), 'ServicesResolved': dbus.Boolean(False, variant_level=1)})


class Transport(DBusMockObject):
    ours = None
    peer = None

    def acquire(self):
        if self.props[TRANSPORT_IFACE]['State'] == 'active':
            raise bluez_error('NotAuthorized', 'Operation Not Authorized')
        self.close()
        self.ours, self.peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        changed(self, TRANSPORT_IFACE, {'State': dbus.String('active', variant_level=1)})
        # dbus-python duplicates the descriptor it sends; ours is closed with the transport.
        return (dbus.types.UnixFd(self.ours.fileno()), dbus.UInt16(READ_MTU), dbus.UInt16(WRITE_MTU))

    @dbus.service.method(TRANSPORT_IFACE, in_signature='', out_signature='hqq')
    def Acquire(self):
        return self.acquire()

    @dbus.service.method(TRANSPORT_IFACE, in_signature='', out_signature='hqq')
    def TryAcquire(self):
        if self.props[TRANSPORT_IFACE]['State'] != 'pending':
            raise bluez_error('NotAvailable', 'Operation currently not available')
        return self.acquire()

    @dbus.service.method(TRANSPORT_IFACE, in_signature='', out_signature='')
    def Release(self):
        if self.ours is not None:
            self.ours.close()
            self.ours = None
        changed(self, TRANSPORT_IFACE, {'State': dbus.String('idle', variant_level=1)})

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature='ssv', out_signature='')
    def Set(self, interface, name, value):
        if interface == TRANSPORT_IFACE and name == 'Volume':
            if int(value) > 127:
                raise bluez_error('InvalidArguments', 'Invalid arguments in method call')
            self.device.volume = int(value)
            changed(self, TRANSPORT_IFACE, {'Volume': dbus.UInt16(int(value), variant_level=1)})
            return
        raise bluez_error('NotSupported', 'only Volume can be set on a transport')

    def close(self):
        for end in (self.ours, self.peer):
            if end is not None:
                end.close()
        self.ours = self.peer = None


def sbc_problem(configuration, capabilities):
    '''Why an SBC configuration (A2DP §4.3.2) is not one value of each field the sink supports; None if it is.'''
    if len(configuration) != 4:
        return 'it is %d bytes, not 4' % len(configuration)
    fields = [('sampling frequency', 0, 0xF0), ('channel mode', 0, 0x0F), ('block length', 1, 0xF0), ('subbands', 1, 0x0C), ('allocation', 1, 0x03)]
    for name, index, mask in fields:
        value = configuration[index] & mask
        if value == 0 or value & (value - 1):
            return 'it has no single ' + name
        if not value & capabilities[index]:
            return 'the sink does not support its ' + name
    if not capabilities[2] <= configuration[2] <= configuration[3] <= capabilities[3]:
        return 'its bitpool %d-%d is outside the sink\'s %d-%d' % (configuration[2], configuration[3], capabilities[2], capabilities[3])
    return None


def device_at(address):
    for obj in objects.values():
        if isinstance(obj, AudioDevice) and str(obj.props[DEVICE_IFACE]['Address']).upper() == address.upper():
            return obj
    raise dbus.exceptions.DBusException('no audio device ' + address, name=BLUEZ_MOCK_IFACE + '.NoSuchDevice')


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ss', out_signature='s')
def AddAdapter(self, device_name, system_name):
    '''An adapter (powered), with Media1, as the stock template adds it but with discovery per client.'''
    path = '/org/bluez/' + device_name
    if path in objects:
        raise dbus.exceptions.DBusException('adapter %s exists' % device_name, name=BLUEZ_MOCK_IFACE + '.NameError')
    properties = {
        'Address': dbus.String('00:11:22:33:44:5%s' % device_name[-1], variant_level=1),
        'AddressType': dbus.String('public', variant_level=1),
        'Name': dbus.String(system_name, variant_level=1),
        'Alias': dbus.String(system_name, variant_level=1),
        'Class': dbus.UInt32(0x10010c, variant_level=1),
        'Powered': dbus.Boolean(True, variant_level=1),
        'Discoverable': dbus.Boolean(False, variant_level=1),
        'Pairable': dbus.Boolean(True, variant_level=1),
        'Discovering': dbus.Boolean(False, variant_level=1),
        'UUIDs': dbus.Array([A2DP_SOURCE, AVRCP_TARGET, AVRCP_CONTROLLER], signature='s', variant_level=1),
    }
    adapter = add(Adapter, path, ADAPTER_IFACE, properties)
    adapter.clients = set()
    adapter.filters = {}
    adapter.endpoints = {}
    adapter.players = {}
    adapter.AddProperties(MEDIA_IFACE, {'SupportedUUIDs': dbus.Array([A2DP_SOURCE, A2DP_SINK], signature='s', variant_level=1)})
    interfaces_added(path, {ADAPTER_IFACE: properties, MEDIA_IFACE: adapter.props[MEDIA_IFACE]})
    return path


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ssssss', out_signature='s')
def AddAudioDevice(self, adapter_name, address, alias, icon, pairing, code):
    '''An A2DP sink in range. `icon` as BlueZ reports it (audio-headphones, audio-card, ...);
    `pairing` one of passkey, pin, confirm, display-passkey, just-works; `code` what it expects
    (the 6-digit passkey, the PIN, or the number shown for confirm and display-passkey).'''
    adapter_path = '/org/bluez/' + adapter_name
    if adapter_path not in objects:
        raise dbus.exceptions.DBusException('no adapter ' + adapter_name, name=BLUEZ_MOCK_IFACE + '.NoSuchAdapter')
    if pairing not in ('passkey', 'pin', 'confirm', 'display-passkey', 'just-works'):
        raise dbus.exceptions.DBusException('unknown pairing kind ' + pairing, name=BLUEZ_MOCK_IFACE + '.InvalidArgs')
    classes = {'audio-headphones': 0x240418, 'audio-headset': 0x240404, 'audio-card': 0x240414}
    path = adapter_path + '/dev_' + address.replace(':', '_').upper()
    properties = {
        'Address': dbus.String(address, variant_level=1),
        'AddressType': dbus.String('public', variant_level=1),
        'Name': dbus.String(alias, variant_level=1),
        'Alias': dbus.String(alias, variant_level=1),
        'Icon': dbus.String(icon, variant_level=1),
        'Class': dbus.UInt32(classes.get(icon, 0x240414), variant_level=1),
        'UUIDs': dbus.Array([A2DP_SINK, AVRCP_TARGET, AVRCP_CONTROLLER], signature='s', variant_level=1),
        'Paired': dbus.Boolean(False, variant_level=1),
        'Bonded': dbus.Boolean(False, variant_level=1),
        'Trusted': dbus.Boolean(False, variant_level=1),
        'Blocked': dbus.Boolean(False, variant_level=1),
        'Connected': dbus.Boolean(False, variant_level=1),
        'ServicesResolved': dbus.Boolean(False, variant_level=1),
        'LegacyPairing': dbus.Boolean(pairing == 'pin', variant_level=1),
        'Adapter': dbus.ObjectPath(adapter_path, variant_level=1),
        'RSSI': dbus.Int16(-60, variant_level=1),
    }
    if path in objects:
        raise dbus.exceptions.DBusException('device %s exists' % address, name=BLUEZ_MOCK_IFACE + '.NameError')
    device = add(AudioDevice, path, DEVICE_IFACE, properties)
    device.kind = pairing
    device.code = code if pairing not in ('confirm', 'display-passkey') or code else '123456'
    device.pairing_callbacks = None
    device.transport = None
    device.transport_count = 0
    device.volume = 64
    device.sink_capabilities = bytes(DEFAULT_SINK_CAPABILITIES)
    interfaces_added(path, {DEVICE_IFACE: properties})
    return path


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='s', out_signature='h')
def TransportPeer(self, address):
    '''The device's end of the acquired transport: what the driver writes arrives here.'''
    transport = device_at(address).transport
    if transport is None or transport.peer is None:
        raise dbus.exceptions.DBusException('no acquired transport to ' + address, name=BLUEZ_MOCK_IFACE + '.NotAcquired')
    return dbus.types.UnixFd(transport.peer.fileno())


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='sq', out_signature='')
def SetRemoteVolume(self, address, volume):
    '''The speaker's own volume buttons (AVRCP absolute volume): Volume changes on the transport.'''
    device = device_at(address)
    device.volume = min(int(volume), 127)
    if device.transport is not None:
        changed(device.transport, TRANSPORT_IFACE, {'Volume': dbus.UInt16(device.volume, variant_level=1)})


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ss', out_signature='')
def PressButton(self, address, button):
    '''A button on the device (AVRCP passthrough): bluetoothd calls the registered player.'''
    device = device_at(address)
    if button not in ('Play', 'Pause', 'Stop', 'Next', 'Previous', 'FastForward', 'Rewind'):
        raise dbus.exceptions.DBusException('no button ' + button, name=BLUEZ_MOCK_IFACE + '.InvalidArgs')
    players = device.adapter().players
    if not device.props[DEVICE_IFACE]['Connected'] or not players:
        raise dbus.exceptions.DBusException('nothing to send %s to' % button, name=BLUEZ_MOCK_IFACE + '.NoPlayer')
    for (sender, path) in list(players):
        call((sender, path, PLAYER_IFACE), button, [], signature='')


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='s', out_signature='')
def DisconnectDevice(self, address):
    '''The device goes away on its own (switched off, out of range); it stays paired.'''
    device_at(address).drop_link()
