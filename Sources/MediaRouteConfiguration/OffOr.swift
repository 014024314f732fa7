/// A setting that is either turned off or given a value (`mprisBus: off`, `pushListen: 127.0.0.1:2197`).
public enum OffOr<Value: Sendable & Hashable>: Sendable, Hashable {
    case off
    case value(Value)
}
