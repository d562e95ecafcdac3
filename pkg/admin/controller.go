package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// Requests to the HA controller and the replication state of brokers
// (docs/replication.md), as Java's MQClientAPIImpl sends them: the
// leader-only requests first ask the given controller for the leader's
// address (CONTROLLER_GET_METADATA_INFO) and then go to the leader.

// ErrNoControllerLeader is returned when the asked controller knows no
// leader (an election is under way, or the quorum is lost).
var ErrNoControllerLeader = errors.New("admin: controller knows no leader")

// ControllerMetaData is a controller's CONTROLLER_GET_METADATA_INFO answer.
type ControllerMetaData struct {
	Group         string   `json:"group"`
	LeaderID      string   `json:"controllerLeaderId"`
	LeaderAddress string   `json:"controllerLeaderAddress"`
	IsLeader      bool     `json:"isLeader"`
	Peers         []string `json:"peers"` // the ';'-separated items, empty ones dropped
	// Header is the raw response header. Java prints an absent field as
	// "null", a present empty one as "".
	Header map[string]string `json:"-"`
}

// GetControllerMetaData asks one controller node who leads the controller
// group (1005). Every node answers, leader or not.
func (c *Client) GetControllerMetaData(ctx context.Context, controllerAddr string) (*ControllerMetaData, error) {
	resp, err := c.invokeOK(ctx, controllerAddr, code.ControllerGetMetadataInfo, nil, nil)
	if err != nil {
		return nil, err
	}
	md := &ControllerMetaData{
		Group:         resp.Ext(protocol.HdrGroup),
		LeaderID:      resp.Ext(protocol.HdrControllerLeaderID),
		LeaderAddress: resp.Ext(protocol.HdrControllerLeaderAddress),
		IsLeader:      resp.Ext(protocol.HdrIsLeader) == "true",
		Header:        copyExt(resp.ExtFields),
	}
	for _, p := range strings.Split(resp.Ext(protocol.HdrPeers), ";") {
		if p = strings.TrimSpace(p); p != "" {
			md.Peers = append(md.Peers, p)
		}
	}
	return md, nil
}

func copyExt(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// ControllerLeader returns the leader's address as controllerAddr reports
// it; ErrNoControllerLeader (wrapped) when there is none.
func (c *Client) ControllerLeader(ctx context.Context, controllerAddr string) (string, error) {
	md, err := c.GetControllerMetaData(ctx, controllerAddr)
	if err != nil {
		return "", err
	}
	if md.LeaderAddress == "" {
		return "", fmt.Errorf("%s: %w", controllerAddr, ErrNoControllerLeader)
	}
	return md.LeaderAddress, nil
}

// GetSyncStateData reads the replicas and SyncStateSets of the named
// broker sets from the controller leader (1006); controllerAddr is any
// controller node. Sets the controller does not know are absent from the
// answer.
func (c *Client) GetSyncStateData(ctx context.Context, controllerAddr string, brokerNames []string) (*protocol.BrokerReplicasInfo, error) {
	leader, err := c.ControllerLeader(ctx, controllerAddr)
	if err != nil {
		return nil, err
	}
	if brokerNames == nil {
		brokerNames = []string{}
	}
	body, err := json.Marshal(brokerNames)
	if err != nil {
		return nil, fmt.Errorf("encode broker names: %w", err)
	}
	var info protocol.BrokerReplicasInfo
	if err := c.invokeDecodeBody(ctx, leader, code.ControllerGetSyncStateData, nil, body, &info); err != nil {
		return nil, err
	}
	if info.ReplicasInfoTable == nil {
		info.ReplicasInfoTable = map[string]protocol.ReplicasInfo{}
	}
	return &info, nil
}

// ElectMasterResult is the controller's answer to an admin election.
type ElectMasterResult struct {
	MasterBrokerID    int64  `json:"masterBrokerId"`
	MasterAddress     string `json:"masterAddress"`
	MasterEpoch       int32  `json:"masterEpoch"`
	SyncStateSetEpoch int32  `json:"syncStateSetEpoch"`
	// Body is the response body; nil when the controller sent none.
	Body *protocol.ElectMasterResponseBody `json:"body,omitempty"`
	// Header is the raw response header (Java prints absent fields as
	// "null").
	Header map[string]string `json:"-"`
}

// ElectMaster asks the controller leader to make brokerID (a controller
// id) the master of its broker set (1002 with designateElect=true, as
// mqadmin electMaster). Any code but SUCCESS is a *ResponseError, among
// them CONTROLLER_MASTER_STILL_EXIST when brokerID already is the master
// and CONTROLLER_ELECT_MASTER_FAILED when it is not electable.
func (c *Client) ElectMaster(ctx context.Context, controllerAddr, cluster, brokerName string, brokerID int64) (*ElectMasterResult, error) {
	leader, err := c.ControllerLeader(ctx, controllerAddr)
	if err != nil {
		return nil, err
	}
	ext := map[string]string{
		protocol.HdrClusterName:    cluster,
		protocol.HdrBrokerName:     brokerName,
		protocol.HdrBrokerID:       strconv.FormatInt(brokerID, 10),
		protocol.HdrDesignateElect: "true",
		protocol.HdrInvokeTime:     strconv.FormatInt(time.Now().UnixMilli(), 10),
	}
	resp, err := c.invokeOK(ctx, leader, code.ControllerElectMaster, ext, nil)
	if err != nil {
		return nil, err
	}
	r := &ElectMasterResult{MasterAddress: resp.Ext(protocol.HdrMasterAddress), Header: copyExt(resp.ExtFields)}
	if err := parseExtInts(resp.ExtFields, leader, code.ControllerElectMaster, map[string]*int64{
		protocol.HdrMasterBrokerID: &r.MasterBrokerID,
	}, map[string]*int32{
		protocol.HdrMasterEpoch:       &r.MasterEpoch,
		protocol.HdrSyncStateSetEpoch: &r.SyncStateSetEpoch,
	}); err != nil {
		return nil, err
	}
	if len(resp.Body) > 0 {
		var b protocol.ElectMasterResponseBody
		if err := decodeBody(resp, leader, code.ControllerElectMaster, &b); err != nil {
			return nil, err
		}
		r.Body = &b
	}
	return r, nil
}

// parseExtInts reads the present numeric header fields into the targets;
// absent ones keep their value, malformed ones are an error.
func parseExtInts(ext map[string]string, addr string, reqCode int32, i64 map[string]*int64, i32 map[string]*int32) error {
	for k, p := range i64 {
		if s, ok := ext[k]; ok && s != "" {
			v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
			if err != nil {
				return fmt.Errorf("%s to %s: bad %s %q", code.RequestName(reqCode), addr, k, s)
			}
			*p = v
		}
	}
	for k, p := range i32 {
		if s, ok := ext[k]; ok && s != "" {
			v, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
			if err != nil {
				return fmt.Errorf("%s to %s: bad %s %q", code.RequestName(reqCode), addr, k, s)
			}
			*p = int32(v)
		}
	}
	return nil
}

// GetControllerConfig reads the configuration of each controller node
// (1010), in the given order. Any failure fails the call, as in Java.
func (c *Client) GetControllerConfig(ctx context.Context, controllerAddrs []string) ([]ServerConfig, error) {
	if len(controllerAddrs) == 0 {
		return nil, fmt.Errorf("%s: no controller address", code.RequestName(code.GetControllerConfig))
	}
	return c.serverConfigs(ctx, controllerAddrs, code.GetControllerConfig)
}

// UpdateControllerConfig sends the properties to every controller node
// (1009); each node applies and persists them on its own. All nodes are
// tried; the error joins the failures (a black-listed key is refused with
// NO_PERMISSION).
func (c *Client) UpdateControllerConfig(ctx context.Context, controllerAddrs []string, props map[string]string) error {
	if len(props) == 0 {
		return nil
	}
	if len(controllerAddrs) == 0 {
		return fmt.Errorf("%s: no controller address", code.RequestName(code.UpdateControllerConfig))
	}
	body := []byte(FormatProperties(props))
	var errs []error
	for _, addr := range controllerAddrs {
		if _, err := c.invokeOK(ctx, addr, code.UpdateControllerConfig, nil, body); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// CleanBrokerMetadataRequest selects what CleanBrokerMetadata removes.
type CleanBrokerMetadataRequest struct {
	Cluster    string // may be empty with CleanLiving
	BrokerName string
	// ControllerIDs are the replicas to remove, "1;2" (empty: the whole
	// broker set).
	ControllerIDs string
	// CleanLiving also removes replicas that are alive.
	CleanLiving bool
}

// CleanBrokerMetadata makes the controller leader forget replicas of a
// broker set, or the whole set (1011). The controller refuses with
// CONTROLLER_INVALID_CLEAN_BROKER_METADATA when a replica to clean is alive
// and CleanLiving is false, or the set is unknown.
func (c *Client) CleanBrokerMetadata(ctx context.Context, controllerAddr string, r CleanBrokerMetadataRequest) error {
	if r.BrokerName == "" {
		return errors.New("clean broker metadata: empty broker name")
	}
	if r.ControllerIDs != "" {
		for _, s := range strings.Split(r.ControllerIDs, ";") {
			if _, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err != nil {
				return fmt.Errorf("clean broker metadata: bad controller id %q in %q", s, r.ControllerIDs)
			}
		}
	}
	leader, err := c.ControllerLeader(ctx, controllerAddr)
	if err != nil {
		return err
	}
	ext := map[string]string{
		protocol.HdrBrokerName:          r.BrokerName,
		protocol.HdrIsCleanLivingBroker: strconv.FormatBool(r.CleanLiving),
		protocol.HdrInvokeTime:          strconv.FormatInt(time.Now().UnixMilli(), 10),
	}
	if r.Cluster != "" {
		ext[protocol.HdrClusterName] = r.Cluster
	}
	if r.ControllerIDs != "" {
		ext[protocol.HdrBrokerControllerIDs] = r.ControllerIDs
	}
	_, err = c.invokeOK(ctx, leader, code.CleanBrokerData, ext, nil)
	return err
}

// GetBrokerEpochCache reads a broker's epoch list (1007). A broker not in
// controller mode answers SYSTEM_ERROR.
func (c *Client) GetBrokerEpochCache(ctx context.Context, brokerAddr string) (*protocol.EpochEntryCache, error) {
	return decodeFrom[protocol.EpochEntryCache](ctx, c, brokerAddr, code.GetBrokerEpochCache, nil)
}

// GetBrokerHAStatus reads a broker's replication state (907): a master's
// slave connections, or a slave's client state.
func (c *Client) GetBrokerHAStatus(ctx context.Context, brokerAddr string) (*protocol.HARuntimeInfo, error) {
	return decodeFrom[protocol.HARuntimeInfo](ctx, c, brokerAddr, code.GetBrokerHAStatus, nil)
}
