package broker

// wireRetry plugs the retry feature into the message path (see wiring).
// Not wired yet: nothing to do.
func (b *Broker) wireRetry(w *wiring) error { return nil }
