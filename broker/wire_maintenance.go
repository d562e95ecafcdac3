package broker

import (
	"fmt"

	"github.com/rmqgo/rmq/broker/admin"
	"github.com/rmqgo/rmq/broker/store"
)

// wireMaintenance serves Apache's store maintenance and cold-data codes
// (admin.Maintenance: 306, 316, 321, 329, 908, 2001–2004, 200056) over the
// message store, the topic table and the online subscriptions.
func (b *Broker) wireMaintenance(w *wiring) error {
	m, err := admin.NewMaintenance(admin.MaintenanceDeps{
		Config: b.cfg,
		Store:  storeMaintenance{w.st},
		TopicExists: func(topic string) bool {
			_, ok := b.topics.Get(topic)
			return ok
		},
		Subscription: func(group, topic string) (any, bool) {
			return w.m.clients.Consumers().FindSubscription(group, topic)
		},
		Logger: w.log.With("component", "admin"),
	})
	if err != nil {
		return fmt.Errorf("broker: maintenance processor: %w", err)
	}
	m.Register(b)
	return nil
}

// storeMaintenance is admin.Store over the message store.
type storeMaintenance struct{ st *store.Store }

func (s storeMaintenance) CleanExpiredQueues() (int, error) {
	ids, err := s.st.CleanExpiredQueues()
	return len(ids), err
}

func (s storeMaintenance) CleanUnusedTopics(inUse func(string) bool) (int, error) {
	topics, err := s.st.CleanUnusedTopics(inUse)
	return len(topics), err
}

func (s storeMaintenance) DeleteExpiredFiles() { s.st.CommitLog().DeleteFilesManually() }

func (s storeMaintenance) SetReadAhead(on bool) error { return s.st.CommitLog().SetReadAhead(on) }

func (s storeMaintenance) SetMasterFlushedOffset(off int64) {
	s.st.CommitLog().SetMasterFlushedOffset(off)
}

func (s storeMaintenance) QueueEntries(topic string, qid int32, from int64, n int) (admin.QueueEntries, bool, error) {
	cq := s.st.ConsumeQueue()
	st, ok := cq.State(topic, qid)
	if !ok {
		return admin.QueueEntries{}, false, nil
	}
	out := admin.QueueEntries{Min: st.Min, Max: st.Max}
	if from < st.Min || from >= st.Max || n <= 0 {
		return out, true, nil
	}
	es, err := cq.Entries(topic, qid, from, n)
	if err != nil {
		return out, true, err
	}
	for _, e := range es {
		out.Entries = append(out.Entries, admin.QueueEntry{Offset: e.Offset, CommitLogOffset: e.CommitLogOffset, Size: e.Size, TagsCode: e.TagsCode})
	}
	return out, true, nil
}
