package broker

// wireOrderly plugs the orderly feature into the message path (see wiring).
// Not wired yet: nothing to do.
func (b *Broker) wireOrderly(w *wiring) error { return nil }
