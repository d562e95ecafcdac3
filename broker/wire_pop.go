package broker

// wirePop plugs pop consumption in (broker/pop): POP_MESSAGE, ACK_MESSAGE,
// BATCH_ACK_MESSAGE, CHANGE_MESSAGE_INVISIBLETIME, PEEK, NOTIFICATION,
// POLLING_INFO, QUERY_ASSIGNMENT, SET_MESSAGE_REQUEST_MODE and the revive
// service.
func (b *Broker) wirePop(w *wiring) error {
	return nil
}
