// Placeholder: the D-Bus library lands here.
