// The values a driver works with (devices, sessions, device errors, playback state) are defined
// with the wire that carries them; a driver author imports `MediaDevice` alone and sees them, and
// none of the wire's messages (those are `package`).
@_exported import MediaRouteWire
