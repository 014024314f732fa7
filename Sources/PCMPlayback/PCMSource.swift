// Placeholder: PCM sources land here.
