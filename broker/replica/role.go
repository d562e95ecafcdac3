package replica

import (
	"slices"
	"strconv"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
)

// Role is what the controller says of a broker set: its master (0: none),
// the master epoch, and the SyncStateSet with its epoch. Self is this
// replica's controller id.
type Role struct {
	Self              int64
	MasterID          int64
	MasterAddr        string
	MasterEpoch       int32
	SyncStateSet      []int64
	SyncStateSetEpoch int32
}

// HasMaster reports whether the set has a master.
func (r Role) HasMaster() bool { return r.MasterID > 0 }

// IsMaster reports whether this replica is the master.
func (r Role) IsMaster() bool { return r.HasMaster() && r.MasterID == r.Self }

// InSyncStateSet reports whether id is a member of the set.
func (r Role) InSyncStateSet(id int64) bool { return slices.Contains(r.SyncStateSet, id) }

// roleFromHeader reads the master fields controllers put in the extFields
// of REGISTER_BROKER, GET_REPLICA_INFO, ELECT_MASTER and
// NOTIFY_BROKER_ROLE_CHANGED; absent or negative ids mean "no master".
func roleFromHeader(self int64, resp *remoting.Command) Role {
	r := Role{Self: self, MasterAddr: resp.Ext(protocol.HdrMasterAddress)}
	if id, err := strconv.ParseInt(resp.Ext(protocol.HdrMasterBrokerID), 10, 64); err == nil && id > 0 {
		r.MasterID = id
	}
	if e, err := strconv.ParseInt(resp.Ext(protocol.HdrMasterEpoch), 10, 32); err == nil {
		r.MasterEpoch = int32(e)
	}
	if e, err := strconv.ParseInt(resp.Ext(protocol.HdrSyncStateSetEpoch), 10, 32); err == nil {
		r.SyncStateSetEpoch = int32(e)
	}
	if !r.HasMaster() {
		r.MasterAddr = ""
	}
	return r
}

// withSet fills the SyncStateSet from a body, if it decodes.
func (r Role) withSet(body []byte) Role {
	if len(body) == 0 {
		return r
	}
	var s protocol.SyncStateSet
	if protocol.Unmarshal(body, &s) == nil {
		r.SyncStateSet = slices.Clone(s.SyncStateSet)
		if s.SyncStateSetEpoch > r.SyncStateSetEpoch {
			r.SyncStateSetEpoch = s.SyncStateSetEpoch
		}
	}
	return r
}
