package broker

// wireConsumerAdmin plugs the consumerAdmin feature into the message path (see wiring).
// Not wired yet: nothing to do.
func (b *Broker) wireConsumerAdmin(w *wiring) error { return nil }
