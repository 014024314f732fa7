'''BlueZ 5 as bluetoothd presents it on D-Bus, for MediaRoute's Bluetooth tests.

python-dbusmock's `bluez5` template, extended where it falls short of bluetoothd as BlueZ's own
documents (doc/org.bluez.Adapter.rst, Device, AgentManager, Agent, Media, MediaEndpoint,
MediaTransport, MediaPlayer) and, where they are silent, its source (src/agent.c, src/device.c,
src/adapter.c, profiles/audio/media.c, transport.c) describe it:

- agents per connection, the first registered the default (RequestDefaultAgent moves one first);
  Pair asks the caller's agent, else the default one (RequestPasskey, RequestPinCode,
  RequestConfirmation, DisplayPasskey) without blocking the bus; a wrong code or any agent error
  -> AuthenticationFailed, CancelPairing -> agent Cancel + AuthenticationCanceled;
- Device1.Connect of an audio sink asks the registered A2DP source endpoint to
  SelectConfiguration from the sink's SBC capabilities, checks the answer, creates the
  MediaTransport1 (InterfacesAdded), hands it over with SetConfiguration, and only then reports
  Connected; Disconnect (or the device going away) calls ClearConfiguration and removes it;
- MediaTransport1.Acquire returns one end of a SOCK_SEQPACKET socket pair (an L2CAP socket's
  framing); the test reads the other end through Mock.TransportPeer;
- Volume (0-127) both ways; buttons reach the player registered with Media1.RegisterPlayer;
- discovery per client (InProgress, Failed, NotReady when powered off); powering off stops
  discovery and drops every link;
- a client leaving the bus is forgotten: its agent, endpoints (their transports go), players,
  discovery and acquired transports;
- properties BlueZ does not document as readwrite answer PropertyReadOnly to Set.

Mock controls (org.bluez.Mock on /): AddAdapter, AddAudioDevice, AddOtherDevice,
RemoveAudioDevice, PairDevice, SetSinkCapabilities, TransportPeer, SetRemoteVolume, PressButton,
DisconnectDevice, plus the stock AddDevice and RemoveAdapter. check_template.py beside this file
checks all of it as a driver would.

Load it with: /usr/bin/python3 -m dbusmock --system --template bluez_mediaroute.py
'''

import socket

import dbus
import dbus.service
from gi.repository import GLib
from dbusmock import mockobject
from dbusmock.mockobject import DBusMockObject, objects
from dbusmock.templates import bluez5
from dbusmock.templates.bluez5 import (BUS_NAME, MAIN_OBJ, SYSTEM_BUS, IS_OBJECT_MANAGER,  # noqa: F401 (dbusmock reads these)
                                       ADAPTER_IFACE, DEVICE_IFACE, AGENT_MANAGER_IFACE, MEDIA_IFACE, OBJECT_MANAGER_IFACE,
                                       BLUEZ_MOCK_IFACE, AddDevice, RemoveAdapter)  # noqa: F401 (stock Mock methods kept)

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
# The sink's reported delay in 1/10 ms (150 ms), as Delay on the transport.
DELAY = 1500
# The AVRCP absolute volume (0-127) a device starts with.
INITIAL_VOLUME = 64

# Agents as src/agent.c keeps them: one per connection (unique name -> (sender, path, interface,
# capability)), and the queue of default agents (the first registered becomes the default).
agents = {}
default_agents = []
CAPABILITIES = ('', 'DisplayOnly', 'DisplayYesNo', 'KeyboardOnly', 'NoInputNoOutput', 'KeyboardDisplay')
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


def read_only(interface, name, checked_interface, writable):
    '''What gdbus answers for a property of `checked_interface` that BlueZ's document does not mark readwrite.'''
    if interface == checked_interface and name not in writable:
        raise dbus.exceptions.DBusException('Property \'%s\' is not writable' % name, name='org.freedesktop.DBus.Error.PropertyReadOnly')


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


# How long the controller takes to report a pairing failed after a negative reply (an HCI round
# trip with the remote; tens of milliseconds on real links).
PAIRING_FAILURE_LATENCY_MS = 200

# How long bluetoothd waits for an agent's answer (src/agent.c REQUEST_TIMEOUT) before failing.
AGENT_TIMEOUT = 60


def agent_for(sender):
    '''The agent bluetoothd asks on behalf of `sender` (agent_get): its own, else the default one.'''
    return agents.get(sender) or (default_agents[0] if default_agents else None)


def owner_left(name, old_owner, new_owner):
    '''A client left the bus: bluetoothd forgets what it registered (its disconnect watches).'''
    if not name.startswith(':') or new_owner:
        return
    agent = agents.pop(name, None)
    if agent in default_agents:
        default_agents.remove(agent)
    for obj in list(objects.values()):
        if isinstance(obj, Adapter):
            obj.client_left(name)
        elif isinstance(obj, Device) and obj.pairing and obj.pairing['sender'] == name:
            # create_bond_req_exit: whoever asked to pair left, the pairing is cancelled.
            obj.cancel_pairing()
        elif isinstance(obj, Transport) and obj.owner == name:
            # media_owner_exit: the stream is suspended, the transport goes back to idle.
            obj.release()


def load(mock, parameters):
    global main
    main = mock
    mock.connection.add_signal_receiver(owner_left, 'NameOwnerChanged', 'org.freedesktop.DBus', 'org.freedesktop.DBus',
                                        '/org/freedesktop/DBus')
    add(AgentManager, '/org/bluez', AGENT_MANAGER_IFACE, {})
    objects['/org/bluez'].AddMethods(PROFILE_MANAGER_IFACE, [
        ('RegisterProfile', 'osa{sv}', '', ''),
        ('UnregisterProfile', 'o', '', ''),
    ])


class AgentManager(DBusMockObject):
    @dbus.service.method(AGENT_MANAGER_IFACE, in_signature='os', out_signature='', sender_keyword='sender')
    def RegisterAgent(self, path, capability, sender=None):
        if sender in agents:
            raise bluez_error('AlreadyExists', 'Already Exists')
        if capability not in CAPABILITIES:
            raise bluez_error('InvalidArguments', 'Invalid arguments in method call')
        agents[sender] = (sender, str(path), AGENT_IFACE, str(capability) or 'KeyboardDisplay')
        default_agents.append(agents[sender])

    @dbus.service.method(AGENT_MANAGER_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
    def RequestDefaultAgent(self, path, sender=None):
        agent = agents.get(sender)
        if agent is None or agent[1] != str(path):
            raise bluez_error('DoesNotExist', 'Does Not Exist')
        default_agents.remove(agent)
        default_agents.insert(0, agent)

    @dbus.service.method(AGENT_MANAGER_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
    def UnregisterAgent(self, path, sender=None):
        agent = agents.get(sender)
        if agent is None or agent[1] != str(path):
            raise bluez_error('DoesNotExist', 'Does Not Exist')
        del agents[sender]
        default_agents.remove(agent)


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
        if isinstance(device, Device):
            device.drop_link()
        remove(str(path))
        interfaces_removed(path, [DEVICE_IFACE])

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature='ssv', out_signature='')
    def Set(self, interface, name, value):
        read_only(interface, name, ADAPTER_IFACE, ('Alias', 'Powered', 'Discoverable', 'Pairable', 'DiscoverableTimeout', 'PairableTimeout'))
        DBusMockObject.Set(self, interface, name, value)
        if interface == ADAPTER_IFACE and name == 'Powered' and not value:
            # Powering off ends discovery and every link (bluetoothd's adapter_stop).
            self.clients.clear()
            if self.props[ADAPTER_IFACE]['Discovering']:
                changed(self, ADAPTER_IFACE, {'Discovering': dbus.Boolean(False, variant_level=1)})
            for obj in list(objects.values()):
                if isinstance(obj, Device) and obj.path.startswith(self.path + '/'):
                    obj.drop_link()

    @dbus.service.method(MEDIA_IFACE, in_signature='oa{sv}', out_signature='', sender_keyword='sender')
    def RegisterEndpoint(self, path, properties, sender=None):
        key = (sender, str(path))
        if key in self.endpoints:
            raise bluez_error('AlreadyExists', 'Already Exists')
        if 'UUID' not in properties or 'Codec' not in properties:
            raise bluez_error('InvalidArguments', 'Invalid arguments in method call')
        if str(properties['UUID']).lower() not in (A2DP_SOURCE, A2DP_SINK):
            # media_endpoint_create answers -EPROTONOSUPPORT for a UUID it has no profile for.
            raise bluez_error('NotSupported', 'Operation is not supported')
        self.endpoints[key] = properties

    @dbus.service.method(MEDIA_IFACE, in_signature='o', out_signature='', sender_keyword='sender')
    def UnregisterEndpoint(self, path, sender=None):
        if self.endpoints.pop((sender, str(path)), None) is None:
            raise bluez_error('DoesNotExist', 'Does Not Exist')
        self.endpoint_gone((sender, str(path)))

    def endpoint_gone(self, key):
        '''An endpoint unregistered or its owner left: bluetoothd destroys the transports configured
        through it (InterfacesRemoved) without calling it again, and the A2DP stream closes; the
        link then goes idle and drops, which this stand-in does at once.'''
        for obj in list(objects.values()):
            if isinstance(obj, Device) and obj.transport is not None and obj.transport.endpoint[:2] == key:
                obj.drop_link(tell_endpoint=False)

    def client_left(self, name):
        self.filters.pop(name, None)
        if name in self.clients:
            self.clients.discard(name)
            if not self.clients and self.props[ADAPTER_IFACE]['Discovering']:
                changed(self, ADAPTER_IFACE, {'Discovering': dbus.Boolean(False, variant_level=1)})
        for key in [key for key in self.endpoints if key[0] == name]:
            del self.endpoints[key]
            self.endpoint_gone(key)
        for key in [key for key in self.players if key[0] == name]:
            del self.players[key]

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


class Device(DBusMockObject):
    '''A device in range. An audio sink (headphones, a speaker: A2DP sink UUID) or not (a phone, a
    keyboard), with how it pairs: "passkey", "pin", "confirm", "display-passkey" or "just-works",
    and the code it expects.'''

    def adapter(self):
        return objects[str(self.props[DEVICE_IFACE]['Adapter'])]

    def is_sink(self):
        return A2DP_SINK in [str(uuid).lower() for uuid in self.props[DEVICE_IFACE]['UUIDs']]

    def set(self, values):
        changed(self, DEVICE_IFACE, values)

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature='ssv', out_signature='')
    def Set(self, interface, name, value):
        read_only(interface, name, DEVICE_IFACE, ('Alias', 'Trusted', 'Blocked', 'WakeAllowed'))
        DBusMockObject.Set(self, interface, name, value)

    @dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='', sender_keyword='sender', async_callbacks=('ok', 'fail'))
    def Pair(self, ok, fail, sender=None):
        # pair_device: bonding or connecting already -> InProgress; bonded -> AlreadyExists.
        if self.pairing or self.connecting:
            return fail(bluez_error('InProgress', 'Operation already in progress'))
        if self.props[DEVICE_IFACE]['Paired']:
            return fail(bluez_error('AlreadyExists', 'Already Exists'))
        if not self.adapter().props[ADAPTER_IFACE]['Powered']:
            return fail(bluez_error('NotReady', 'Resource Not Ready'))
        if self.kind == 'just-works':
            return self.paired(ok)
        # The caller's own agent, else the default one (agent_get). With none, bluetoothd pairs as
        # NoInputNoOutput: the PIN or passkey request gets a negative reply and the kernel reports
        # an authentication failure.
        agent = agent_for(sender)
        if agent is None:
            return fail(bluez_error('AuthenticationFailed', 'Authentication Failed'))
        self.pairing = {'ok': ok, 'fail': fail, 'agent': agent, 'sender': sender}
        device = dbus.ObjectPath(self.path)
        if self.kind == 'passkey':
            call(agent, 'RequestPasskey', [device], lambda passkey: self.answered('%06d' % int(passkey)), self.agent_failed, 'o', AGENT_TIMEOUT)
        elif self.kind == 'pin':
            call(agent, 'RequestPinCode', [device], lambda pin: self.answered(str(pin)), self.agent_failed, 'o', AGENT_TIMEOUT)
        elif self.kind == 'confirm':
            call(agent, 'RequestConfirmation', [device, dbus.UInt32(int(self.code))], lambda: self.answered(self.code), self.agent_failed, 'ou', AGENT_TIMEOUT)
        else:
            # display-passkey: the agent shows the number; the person types it on the device, which
            # then completes the pairing. Here the agent's reply stands for that person: the
            # stand-in completes when DisplayPasskey returns (bluetoothd itself does not wait for
            # that reply: the remote's keystrokes decide).
            call(agent, 'DisplayPasskey', [device, dbus.UInt32(int(self.code)), dbus.UInt16(0)],
                 lambda: self.answered(self.code), self.agent_failed, 'ouq', AGENT_TIMEOUT)

    def answered(self, code):
        pairing, self.pairing = self.pairing, None
        if not pairing:
            return
        if code == self.code:
            self.paired(pairing['ok'])
        else:
            pairing['fail'](bluez_error('AuthenticationFailed', 'Authentication Failed'))

    def agent_failed(self, error):
        # Any error from the agent (org.bluez.Error.Rejected, org.bluez.Error.Canceled, a timeout)
        # becomes a negative reply to the kernel (src/device.c passkey_cb, pincode_cb, confirm_cb);
        # the pairing ends when the controller reports it failed, with HCI "Authentication
        # Failure": Pair answers AuthenticationFailed (new_authentication_return), not Rejected
        # or Canceled. A CancelPairing that arrives before that report wins: AuthenticationCanceled.
        pairing = self.pairing
        if not pairing:
            return
        pairing['agent_answered'] = True

        def reported():
            if self.pairing is pairing:
                self.pairing = None
                pairing['fail'](bluez_error('AuthenticationFailed', 'Authentication Failed'))
            return False
        GLib.timeout_add(PAIRING_FAILURE_LATENCY_MS, reported)

    def paired(self, ok):
        self.set({'Paired': dbus.Boolean(True, variant_level=1), 'Bonded': dbus.Boolean(True, variant_level=1)})
        ok()

    def cancel_pairing(self):
        '''device_cancel_bonding(MGMT_STATUS_CANCELLED): the agent is told with Cancel, Pair answers
        AuthenticationCanceled. False if no pairing was under way.'''
        pairing, self.pairing = self.pairing, None
        if not pairing:
            return False
        if not pairing.get('agent_answered'):
            # device_cancel_authentication: the agent's request is withdrawn, if still open.
            call(pairing['agent'], 'Cancel', [], signature='')
        pairing['fail'](bluez_error('AuthenticationCanceled', 'Authentication Canceled'))
        return True

    @dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='')
    def CancelPairing(self):
        if not self.cancel_pairing():
            raise bluez_error('DoesNotExist', 'Does Not Exist')

    @dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='', async_callbacks=('ok', 'fail'))
    def Connect(self, ok, fail):
        # connect_profiles (src/device.c): busy -> InProgress, adapter off -> NotReady, each with
        # its br-connection-* message; everything already connected -> success.
        if self.pairing or self.connecting:
            return fail(bluez_error('InProgress', 'br-connection-busy'))
        if not self.adapter().props[ADAPTER_IFACE]['Powered']:
            return fail(bluez_error('NotReady', 'br-connection-adapter-not-powered'))
        if self.props[DEVICE_IFACE]['Connected']:
            return ok()
        if not self.props[DEVICE_IFACE]['Paired']:
            # Simplified: bluetoothd would start the link, the device would ask for security and
            # the default agent would be asked as in Pair. Here a device that needs a code refuses
            # the connection until it has been paired; a Just Works one pairs on the way.
            if self.kind != 'just-works':
                return fail(bluez_error('AuthenticationFailed', 'Authentication Failed'))
            self.set({'Paired': dbus.Boolean(True, variant_level=1), 'Bonded': dbus.Boolean(True, variant_level=1)})
        if not self.is_sink():
            # Not an audio sink: its other profiles connect (none of them is modelled here).
            self.set({'Connected': dbus.Boolean(True, variant_level=1), 'ServicesResolved': dbus.Boolean(True, variant_level=1)})
            return ok()
        endpoint, _ = self.adapter().source_endpoint()
        if endpoint is None:
            # What bluetoothd answers when no profile of the device can connect (no A2DP source
            # endpoint registered): ENOPROTOOPT. BlueZ up to 5.83 (Debian 12 has 5.66) says
            # org.bluez.Error.Failed "br-connection-profile-unavailable"; 5.84 and later say
            # org.bluez.Error.BREDR.ProfileUnavailable "No more profiles to connect to".
            return fail(bluez_error('Failed', 'br-connection-profile-unavailable'))
        self.connecting = True

        def failed(message):
            self.connecting = False
            fail(bluez_error('Failed', message))

        def selected(configuration):
            if not self.connecting:
                return
            configuration = bytes(configuration)
            problem = sbc_problem(configuration, self.sink_capabilities)
            if problem:
                return failed('the endpoint selected an SBC configuration the sink cannot take: ' + problem)
            self.transport_count += 1
            path = self.path + '/fd%d' % self.transport_count
            properties = {
                'Device': dbus.ObjectPath(self.path, variant_level=1),
                # The local endpoint's UUID (transport.c get_uuid): the A2DP source role.
                'UUID': dbus.String(A2DP_SOURCE, variant_level=1),
                'Codec': dbus.Byte(0, variant_level=1),
                'Configuration': dbus.Array([dbus.Byte(b) for b in configuration], signature='y', variant_level=1),
                'State': dbus.String('idle', variant_level=1),
                'Volume': dbus.UInt16(self.volume, variant_level=1),
                'Delay': dbus.UInt16(DELAY, variant_level=1),
                'Endpoint': dbus.ObjectPath(endpoint[1], variant_level=1),
            }
            transport = add(Transport, path, TRANSPORT_IFACE, properties)
            transport.device = self
            transport.endpoint = endpoint
            self.transport = transport
            interfaces_added(path, {TRANSPORT_IFACE: properties})

            def configured():
                self.connecting = False
                if self.transport is not transport:
                    return fail(bluez_error('Failed', 'the link went while connecting'))
                self.set({'Connected': dbus.Boolean(True, variant_level=1), 'ServicesResolved': dbus.Boolean(True, variant_level=1)})
                ok()

            def refused(error):
                self.drop_link(tell_endpoint=False)
                failed('the endpoint refused the configuration: ' + error.get_dbus_message())
            call(endpoint, 'SetConfiguration', [dbus.ObjectPath(path), properties], configured, refused, 'oa{sv}')

        # Real order, for the record: bluetoothd reports Connected=true when the ACL link is up,
        # before AVDTP configures the stream, and answers Connect once the profile is connected.
        # The stand-in reports Connected only once the transport is configured; a client that
        # waits for the transport (as it must) sees no difference.
        call(endpoint, 'SelectConfiguration', [dbus.Array([dbus.Byte(b) for b in self.sink_capabilities], signature='y')], selected,
             lambda error: failed('SelectConfiguration failed: ' + error.get_dbus_message()), 'ay')

    @dbus.service.method(DEVICE_IFACE, in_signature='', out_signature='')
    def Disconnect(self):
        if not self.props[DEVICE_IFACE]['Connected']:
            raise bluez_error('NotConnected', 'Not Connected')
        self.drop_link()

    @dbus.service.method(DEVICE_IFACE, in_signature='s', out_signature='')
    def ConnectProfile(self, uuid):
        raise bluez_error('NotSupported', 'Operation is not supported by this stand-in; use Connect')

    @dbus.service.method(DEVICE_IFACE, in_signature='s', out_signature='')
    def DisconnectProfile(self, uuid):
        raise bluez_error('NotSupported', 'Operation is not supported by this stand-in; use Disconnect')

    def drop_link(self, tell_endpoint=True):
        '''The link goes (asked for, out of range, switched off, adapter off): the endpoint is told
        with ClearConfiguration, the transport disappears, and the device says it is not connected.'''
        self.connecting = False
        transport = self.transport
        self.transport = None
        if transport is not None:
            if tell_endpoint:
                call(transport.endpoint, 'ClearConfiguration', [dbus.ObjectPath(transport.path)], signature='o')
            transport.close()
            remove(transport.path)
            interfaces_removed(transport.path, [TRANSPORT_IFACE])
        if self.props[DEVICE_IFACE]['Connected']:
            self.set({'Connected': dbus.Boolean(False, variant_level=1), 'ServicesResolved': dbus.Boolean(False, variant_level=1)})


class Transport(DBusMockObject):
    '''An A2DP stream's transport. Its socket is a SOCK_SEQPACKET pair: one end for the client
    that acquires it, the other (Mock.TransportPeer) for the test, which reads there the packets
    the sink would receive. The pair lives until the transport goes, so the test can read what
    was written before a Release up to EOF.'''
    ours = None
    peer = None
    # The unique name that acquired the transport (bluetoothd's media_owner).
    owner = None

    def acquire(self, sender):
        if self.owner is not None:
            raise bluez_error('NotAuthorized', 'Operation Not Authorized')
        # A new stream each time: a test that took the peer end of the previous one keeps its
        # copy (sent descriptors are duplicates) and reads that one to EOF.
        self.close()
        self.ours, self.peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.owner = sender
        # Acquiring an idle A2DP transport resumes the stream: pending, then active once the
        # sink confirms (immediately here).
        changed(self, TRANSPORT_IFACE, {'State': dbus.String('active', variant_level=1)})
        # dbus-python duplicates the descriptor it sends; ours stays open until the transport goes.
        return (dbus.types.UnixFd(self.ours.fileno()), dbus.UInt16(READ_MTU), dbus.UInt16(WRITE_MTU))

    @dbus.service.method(TRANSPORT_IFACE, in_signature='', out_signature='hqq', sender_keyword='sender')
    def Acquire(self, sender=None):
        return self.acquire(sender)

    @dbus.service.method(TRANSPORT_IFACE, in_signature='', out_signature='hqq', sender_keyword='sender')
    def TryAcquire(self, sender=None):
        # Only a stream the sink itself started (State "pending") can be taken without resuming it.
        if self.props[TRANSPORT_IFACE]['State'] != 'pending':
            raise bluez_error('NotAvailable', 'Operation currently not available')
        return self.acquire(sender)

    @dbus.service.method(TRANSPORT_IFACE, in_signature='', out_signature='', sender_keyword='sender')
    def Release(self, sender=None):
        if self.owner != sender:
            raise bluez_error('NotAuthorized', 'Operation Not Authorized')
        self.release()

    def release(self):
        '''The stream is suspended: back to idle. The test's end keeps what was written; once every
        copy of the client's end is closed, reading it gives EOF.'''
        self.owner = None
        if self.ours is not None:
            self.ours.close()
            self.ours = None
        changed(self, TRANSPORT_IFACE, {'State': dbus.String('idle', variant_level=1)})

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature='ssv', out_signature='')
    def Set(self, interface, name, value):
        if interface == TRANSPORT_IFACE and name == 'Volume':
            # transport.c set_volume: above 127 -> InvalidArguments.
            if int(value) > 127:
                raise bluez_error('InvalidArguments', 'Invalid arguments in method call')
            self.device.volume = int(value)
            changed(self, TRANSPORT_IFACE, {'Volume': dbus.UInt16(int(value), variant_level=1)})
            return
        if interface == TRANSPORT_IFACE and name in self.props[TRANSPORT_IFACE]:
            # What gdbus answers for a property without a setter.
            raise dbus.exceptions.DBusException('Property \'%s\' is not writable' % name,
                                                name='org.freedesktop.DBus.Error.PropertyReadOnly')
        raise dbus.exceptions.DBusException('No such property \'%s\'' % name, name='org.freedesktop.DBus.Error.InvalidArgs')

    def close(self):
        for end in (self.ours, self.peer):
            if end is not None:
                end.close()
        self.ours = self.peer = None
        self.owner = None


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
        if isinstance(obj, Device) and str(obj.props[DEVICE_IFACE]['Address']).upper() == address.upper():
            return obj
    raise dbus.exceptions.DBusException('no device ' + address, name=BLUEZ_MOCK_IFACE + '.NoSuchDevice')


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


PAIRING_KINDS = ('passkey', 'pin', 'confirm', 'display-passkey', 'just-works')
# Class of Device (Bluetooth Assigned Numbers, "Baseband"): service bits Rendering + Audio, major
# class Audio/Video (0x04), and the minor class BlueZ's class_to_icon maps to each icon.
AUDIO_CLASSES = {'audio-headphones': 0x240418, 'audio-headset': 0x240404, 'audio-card': 0x240414}
CAR_AUDIO_CLASS = 0x240420  # minor class Car audio: bluetoothd's icon for it is also audio-card
# Devices that are not audio sinks: a phone (Telephony + Object Transfer + Networking, major Phone,
# minor Smartphone; its UUIDs include A2DP *source*, not sink) and a keyboard (major Peripheral,
# minor Keyboard; HID).
OTHER_DEVICES = {
    'phone': (0x5a020c, ['00001105-0000-1000-8000-00805f9b34fb', A2DP_SOURCE, AVRCP_TARGET, AVRCP_CONTROLLER,
                         '0000111f-0000-1000-8000-00805f9b34fb', '0000112f-0000-1000-8000-00805f9b34fb']),
    'input-keyboard': (0x002540, ['00001124-0000-1000-8000-00805f9b34fb']),
}


def new_device(adapter_name, address, alias, icon, class_, uuids, pairing, code):
    adapter_path = '/org/bluez/' + adapter_name
    if adapter_path not in objects:
        raise dbus.exceptions.DBusException('no adapter ' + adapter_name, name=BLUEZ_MOCK_IFACE + '.NoSuchAdapter')
    if pairing not in PAIRING_KINDS:
        raise dbus.exceptions.DBusException('unknown pairing kind %s (one of %s)' % (pairing, ', '.join(PAIRING_KINDS)),
                                            name=BLUEZ_MOCK_IFACE + '.InvalidArgs')
    if pairing in ('passkey', 'confirm', 'display-passkey') and code and not (len(code) == 6 and code.isdigit()):
        raise dbus.exceptions.DBusException('a passkey is 6 digits, not %r' % code, name=BLUEZ_MOCK_IFACE + '.InvalidArgs')
    path = adapter_path + '/dev_' + address.replace(':', '_').upper()
    if path in objects:
        raise dbus.exceptions.DBusException('device %s exists' % address, name=BLUEZ_MOCK_IFACE + '.NameError')
    properties = {
        'Address': dbus.String(address.upper(), variant_level=1),
        'AddressType': dbus.String('public', variant_level=1),
        'Name': dbus.String(alias, variant_level=1),
        'Alias': dbus.String(alias, variant_level=1),
        'Icon': dbus.String(icon, variant_level=1),
        'Class': dbus.UInt32(class_, variant_level=1),
        'UUIDs': dbus.Array(uuids, signature='s', variant_level=1),
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
    device = add(Device, path, DEVICE_IFACE, properties)
    device.kind = pairing
    # confirm and display-passkey need a number; 123456 when none is given.
    device.code = code if pairing not in ('confirm', 'display-passkey') or code else '123456'
    device.pairing = None
    device.connecting = False
    device.transport = None
    device.transport_count = 0
    device.volume = INITIAL_VOLUME
    device.sink_capabilities = bytes(DEFAULT_SINK_CAPABILITIES)
    interfaces_added(path, {DEVICE_IFACE: properties})
    return path


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ssssss', out_signature='s')
def AddAudioDevice(self, adapter_name, address, alias, icon, pairing, code):
    '''An A2DP sink in range, unpaired. `icon` as BlueZ reports it: audio-headphones,
    audio-headset, audio-card (a speaker), or "car-audio" (reported as audio-card with the car
    audio class); `pairing` one of passkey, pin, confirm, display-passkey, just-works; `code` what
    the device expects: the 6-digit passkey, the PIN, or the number shown for confirm and
    display-passkey (123456 if empty). Returns the device's object path.'''
    if icon == 'car-audio':
        (icon, class_) = ('audio-card', CAR_AUDIO_CLASS)
    else:
        class_ = AUDIO_CLASSES.get(icon, AUDIO_CLASSES['audio-card'])
    return new_device(adapter_name, address, alias, icon, class_, [A2DP_SINK, AVRCP_TARGET, AVRCP_CONTROLLER], pairing, code)


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ssss', out_signature='s')
def AddOtherDevice(self, adapter_name, address, alias, icon):
    '''A device in range that is not an audio sink: icon "phone" or "input-keyboard". It pairs
    Just Works and connects without any media. Returns its object path.'''
    if icon not in OTHER_DEVICES:
        raise dbus.exceptions.DBusException('no other device kind %s (phone or input-keyboard)' % icon,
                                            name=BLUEZ_MOCK_IFACE + '.InvalidArgs')
    (class_, uuids) = OTHER_DEVICES[icon]
    return new_device(adapter_name, address, alias, icon, class_, uuids, 'just-works', '')


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='s', out_signature='')
def RemoveAudioDevice(self, address):
    '''The device leaves bluetoothd's list (an unpaired device unseen for a while, or removed):
    its link drops first, then InterfacesRemoved.'''
    device = device_at(address)
    device.cancel_pairing()
    device.drop_link()
    remove(device.path)
    interfaces_removed(device.path, [DEVICE_IFACE])


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='say', out_signature='')
def SetSinkCapabilities(self, address, capabilities):
    '''The SBC capabilities (A2DP §4.3.2, 4 bytes) the device offers at its next Connect.'''
    if len(capabilities) != 4:
        raise dbus.exceptions.DBusException('SBC capabilities are 4 bytes, not %d' % len(capabilities),
                                            name=BLUEZ_MOCK_IFACE + '.InvalidArgs')
    device_at(address).sink_capabilities = bytes(capabilities)


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
    if int(volume) > 127:
        raise dbus.exceptions.DBusException('AVRCP volume is 0-127, not %d' % volume, name=BLUEZ_MOCK_IFACE + '.InvalidArgs')
    device.volume = int(volume)
    if device.transport is not None:
        changed(device.transport, TRANSPORT_IFACE, {'Volume': dbus.UInt16(device.volume, variant_level=1)})


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ss', out_signature='')
def PressButton(self, address, button):
    '''A button on the device (AVRCP passthrough): bluetoothd calls that method of the player
    registered with Media1.RegisterPlayer (each one registered on the device's adapter).'''
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
    '''The device goes away on its own (switched off, out of range): ClearConfiguration, the
    transport removed, Connected false. It stays listed and paired; Connect brings it back.'''
    device = device_at(address)
    if not device.props[DEVICE_IFACE]['Connected'] and device.transport is None:
        raise dbus.exceptions.DBusException(address + ' is not connected', name=BLUEZ_MOCK_IFACE + '.NotConnected')
    device.drop_link()


@dbus.service.method(BLUEZ_MOCK_IFACE, in_signature='ssi', out_signature='')
def PairDevice(self, adapter_name, address, class_):
    '''A device paired earlier (bonded, as after a reboot): Paired and Bonded true, nothing else
    changed. The stock template's version (which also turns the device into a phone) still applies
    to devices added with the stock AddDevice; `class_` is used only for those.'''
    path = '/org/bluez/%s/dev_%s' % (adapter_name, address.replace(':', '_').upper())
    device = objects.get(path)
    if not isinstance(device, Device):
        return bluez5.PairDevice(self, adapter_name, address, class_)
    device.set({'Paired': dbus.Boolean(True, variant_level=1), 'Bonded': dbus.Boolean(True, variant_level=1)})
