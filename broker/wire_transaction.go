package broker

// wireTransaction plugs the transaction feature into the message path (see wiring).
// Not wired yet: nothing to do.
func (b *Broker) wireTransaction(w *wiring) error { return nil }
