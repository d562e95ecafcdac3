package broker

// wireSchedule plugs the schedule feature into the message path (see wiring).
// Not wired yet: nothing to do.
func (b *Broker) wireSchedule(w *wiring) error { return nil }
