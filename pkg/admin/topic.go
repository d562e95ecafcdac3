package admin

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// CreateTopic creates or updates a topic on one broker (17). attributes is
// the admin syntax "+k=v,+k2=v2,-k3" ("" for none); tc.Attributes is not
// sent. The default topic is TBW102, as the Java tool's createTopicKey.
func (c *Client) CreateTopic(ctx context.Context, brokerAddr string, tc protocol.TopicConfig, attributes string) error {
	if !validPerm(tc.Perm) {
		return fmt.Errorf("topicPermission value: %d is invalid.", tc.Perm) //nolint:staticcheck // Java's message
	}
	ext := topicHeader(tc, protocol.AutoCreateTopicKey, false)
	ext["attributes"] = strings.TrimSpace(attributes)
	_, err := c.invokeOK(ctx, brokerAddr, code.UpdateAndCreateTopic, ext, nil)
	return err
}

// CreateTopicList creates or updates topics on one broker in one request
// (UPDATE_AND_CREATE_TOPIC_LIST, 18; Java's createAndUpdateTopicConfigList):
// the broker checks them all before it applies any.
func (c *Client) CreateTopicList(ctx context.Context, brokerAddr string, list []protocol.TopicConfig) error {
	body, err := protocol.Marshal(struct {
		TopicConfigList []protocol.TopicConfig `json:"topicConfigList"`
	}{list})
	if err != nil {
		return fmt.Errorf("encode topic config list: %w", err)
	}
	_, err = c.invokeOK(ctx, brokerAddr, code.UpdateAndCreateTopicList, nil, body)
	return err
}

// topicHeader is the header of a topic create (17, 513) for tc, created
// from defaultTopic; an empty filter type is SINGLE_TAG.
func topicHeader(tc protocol.TopicConfig, defaultTopic string, force bool) map[string]string {
	filter := tc.TopicFilterType
	if filter == "" {
		filter = protocol.SingleTag
	}
	return map[string]string{
		"topic":           tc.TopicName,
		"defaultTopic":    defaultTopic,
		"readQueueNums":   strconv.Itoa(tc.ReadQueueNums),
		"writeQueueNums":  strconv.Itoa(tc.WriteQueueNums),
		"perm":            strconv.Itoa(tc.Perm),
		"topicFilterType": filter,
		"topicSysFlag":    strconv.Itoa(tc.TopicSysFlag),
		"order":           strconv.FormatBool(tc.Order),
		"force":           strconv.FormatBool(force),
	}
}

// CreateTopicInCluster creates or updates a topic on every master of a
// cluster (106, then 17 each) and returns the masters it was created on.
// It stops at the first failure, as the Java tool.
func (c *Client) CreateTopicInCluster(ctx context.Context, cluster string, tc protocol.TopicConfig, attributes string) ([]string, error) {
	masters, err := c.ClusterMasters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	var done []string
	for _, addr := range masters {
		if err := c.CreateTopic(ctx, addr, tc, attributes); err != nil {
			return done, err
		}
		done = append(done, addr)
	}
	return done, nil
}

// DeleteTopicInBroker deletes a topic from one broker (215).
func (c *Client) DeleteTopicInBroker(ctx context.Context, brokerAddr, topic string) error {
	_, err := c.invokeOK(ctx, brokerAddr, code.DeleteTopicInBroker, map[string]string{"topic": topic}, nil)
	return err
}

// DeleteTopic deletes a topic from a cluster: 215 to each of its masters,
// then 216 (topic, clusterName) to every nameserver. It returns the masters.
// A broker failure stops before the nameservers.
func (c *Client) DeleteTopic(ctx context.Context, cluster, topic string) ([]string, error) {
	masters, err := c.DeleteTopicInCluster(ctx, cluster, topic)
	if err != nil {
		return masters, err
	}
	return masters, c.DeleteTopicInNameServers(ctx, cluster, topic)
}

// DeleteTopicInCluster deletes a topic from every master of a cluster
// (106, then 215 each), stopping at the first failure, and returns the
// masters.
func (c *Client) DeleteTopicInCluster(ctx context.Context, cluster, topic string) ([]string, error) {
	masters, err := c.ClusterMasters(ctx, cluster)
	if err != nil {
		return nil, err
	}
	for _, addr := range masters {
		if err := c.DeleteTopicInBroker(ctx, addr, topic); err != nil {
			return masters, err
		}
	}
	return masters, nil
}

// DeleteTopicInNameServers sends 216 (topic, clusterName) to every
// nameserver; the error joins the failures.
func (c *Client) DeleteTopicInNameServers(ctx context.Context, cluster, topic string) error {
	if len(c.cfg.NameServers) == 0 {
		return fmt.Errorf("%s: %w", code.RequestName(code.DeleteTopicInNamesrv), ErrNoNameServer)
	}
	var errs []error
	for _, ns := range c.cfg.NameServers {
		if err := c.DeleteTopicInNameServer(ctx, ns, cluster, topic); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// GetTopicConfig reads one topic's config from a broker (351, lo=true); a
// static topic also has its mapping detail. A missing topic is a
// *ResponseError with code TOPIC_NOT_EXIST.
func (c *Client) GetTopicConfig(ctx context.Context, brokerAddr, topic string) (*protocol.TopicConfigAndQueueMapping, error) {
	return decodeFrom[protocol.TopicConfigAndQueueMapping](ctx, c, brokerAddr, code.GetTopicConfig, map[string]string{"topic": topic, "lo": "true"})
}

// maxTopicPage is the page size of GET_ALL_TOPIC_CONFIG, as the Java
// client's maxPageSizeInGetMetadata.
const maxTopicPage = 2000

// GetAllTopicConfig reads every topic config of a broker (21), following
// the paging of servers that answer totalTopicNum.
func (c *Client) GetAllTopicConfig(ctx context.Context, brokerAddr string) (*protocol.TopicConfigSerializeWrapper, error) {
	var (
		dv       *protocol.DataVersion
		seq      int
		table    = map[string]protocol.TopicConfig{}
		restarts int
	)
	for {
		ext := map[string]string{"topicSeq": strconv.Itoa(seq), "maxTopicNum": strconv.Itoa(maxTopicPage), "dataVersion": ""}
		if dv != nil {
			ext["dataVersion"] = string(protocol.MustMarshal(dv))
		}
		resp, err := c.invokeOK(ctx, brokerAddr, code.GetAllTopicConfig, ext, nil)
		if err != nil {
			return nil, err
		}
		var w protocol.TopicConfigSerializeWrapper
		if err := decodeBody(resp, brokerAddr, code.GetAllTopicConfig, &w); err != nil {
			return nil, err
		}
		if dv == nil {
			v := w.DataVersion
			dv = &v
		}
		total := resp.Ext("totalTopicNum")
		if total == "" { // server without paging: everything in one answer
			for k, v := range w.TopicConfigTable {
				table[k] = v
			}
			break
		}
		n, err := strconv.Atoi(total)
		if err != nil {
			return nil, fmt.Errorf("%s to %s: bad totalTopicNum %q", code.RequestName(code.GetAllTopicConfig), brokerAddr, total)
		}
		if !dv.Equal(w.DataVersion) {
			if restarts++; restarts > 3 {
				return nil, fmt.Errorf("%s to %s: topic table keeps changing while paging", code.RequestName(code.GetAllTopicConfig), brokerAddr)
			}
			v := w.DataVersion
			dv, seq, table = &v, 0, map[string]protocol.TopicConfig{}
			continue
		}
		for k, v := range w.TopicConfigTable {
			table[k] = v
		}
		seq += len(w.TopicConfigTable)
		if seq >= n || len(w.TopicConfigTable) == 0 {
			break
		}
	}
	return &protocol.TopicConfigSerializeWrapper{DataVersion: *dv, TopicConfigTable: table}, nil
}

// GetTopicStats reads a topic's per-queue offsets from one broker (202).
func (c *Client) GetTopicStats(ctx context.Context, brokerAddr, topic string) (*protocol.TopicStatsTable, error) {
	var st protocol.TopicStatsTable
	if err := c.invokeDecode(ctx, brokerAddr, code.GetTopicStatsInfo, map[string]string{"topic": topic}, &st); err != nil {
		return nil, err
	}
	if st.OffsetTable == nil {
		st.OffsetTable = protocol.MQMap[protocol.TopicOffset]{}
	}
	return &st, nil
}

// ExamineTopicStats collects a topic's stats from every broker of its
// route (Java's examineTopicStats(topic)): 105, then 202 and 351 per broker
// (master preferred). For a static topic, the logic queues are added under
// the mock broker name next to the physical ones. As in Java, TopicPutTps
// of the result is not aggregated (it stays 0). A topic without any stats
// is an error.
func (c *Client) ExamineTopicStats(ctx context.Context, topic string) (*protocol.TopicStatsTable, error) {
	route, err := c.GetTopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	out, err := c.topicStatsOfRoute(ctx, topic, route)
	if err != nil {
		return nil, err
	}
	configs, err := c.topicConfigsOfRoute(ctx, topic, route)
	if err != nil {
		return nil, err
	}
	convertStaticTopicStats(topic, configs, out)
	if len(out.OffsetTable) == 0 {
		return nil, fmt.Errorf("topic %s: Not found the topic stats info", topic)
	}
	return out, nil
}

// ExamineTopicStatsOfRoute collects stats of topic from every broker of
// another topic's route (mqadmin topicStatus -c: the route of a cluster or
// lmq parent topic), without static-topic conversion.
func (c *Client) ExamineTopicStatsOfRoute(ctx context.Context, routeTopic, topic string) (*protocol.TopicStatsTable, error) {
	route, err := c.GetTopicRoute(ctx, routeTopic)
	if err != nil {
		return nil, err
	}
	return c.topicStatsOfRoute(ctx, topic, route)
}

// topicStatsOfRoute merges topic's per-queue offsets (202) from every
// broker of a route (master preferred); any failure aborts.
func (c *Client) topicStatsOfRoute(ctx context.Context, topic string, route *protocol.TopicRouteData) (*protocol.TopicStatsTable, error) {
	out := &protocol.TopicStatsTable{OffsetTable: protocol.MQMap[protocol.TopicOffset]{}}
	for _, addr := range routeAddrs(route) {
		st, err := c.GetTopicStats(ctx, addr, topic)
		if err != nil {
			return nil, err
		}
		for k, v := range st.OffsetTable {
			out.OffsetTable[k] = v
		}
	}
	return out, nil
}

// topicConfigsOfRoute reads the topic config of every broker of a route
// (351); TOPIC_NOT_EXIST is skipped, other failures abort (Java's
// examineTopicConfigFromRoute).
func (c *Client) topicConfigsOfRoute(ctx context.Context, topic string, route *protocol.TopicRouteData) (map[string]*protocol.TopicConfigAndQueueMapping, error) {
	out := map[string]*protocol.TopicConfigAndQueueMapping{}
	for _, bd := range route.BrokerDatas {
		addr := SelectBrokerAddr(bd)
		if addr == "" {
			continue
		}
		tc, err := c.GetTopicConfig(ctx, addr, topic)
		if err != nil {
			if IsCode(err, code.TopicNotExist) {
				continue
			}
			return nil, err
		}
		out[bd.BrokerName] = tc
	}
	return out, nil
}

// QueryTopicConsumeByWho lists the consumer groups of a topic known to one
// broker (300).
func (c *Client) QueryTopicConsumeByWho(ctx context.Context, brokerAddr, topic string) ([]string, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.QueryTopicConsumeByWho, map[string]string{"topic": topic}, nil)
	if err != nil {
		return nil, err
	}
	var gl struct {
		GroupList []string `json:"groupList"`
	}
	if err := decodeBody(resp, brokerAddr, code.QueryTopicConsumeByWho, &gl); err != nil {
		return nil, err
	}
	return gl.GroupList, nil
}

// QueryTopicConsumeByWhoRoute asks the first broker of the topic's route
// (Java's queryTopicConsumeByWho(topic)); nil when the route has no broker.
func (c *Client) QueryTopicConsumeByWhoRoute(ctx context.Context, topic string) ([]string, error) {
	route, err := c.GetTopicRoute(ctx, topic)
	if err != nil {
		return nil, err
	}
	for _, bd := range route.BrokerDatas {
		if addr := SelectBrokerAddr(bd); addr != "" {
			return c.QueryTopicConsumeByWho(ctx, addr, topic)
		}
	}
	return nil, nil
}

// GetSystemTopicListFromBroker reads the broker's system topics
// (GET_SYSTEM_TOPIC_LIST_FROM_BROKER, 305: the reserved names and the
// topics it made at boot).
func (c *Client) GetSystemTopicListFromBroker(ctx context.Context, brokerAddr string) ([]string, error) {
	tl, err := decodeFrom[protocol.TopicList](ctx, c, brokerAddr, code.GetSystemTopicListFromBroker, nil)
	if err != nil {
		return nil, err
	}
	return tl.TopicList, nil
}

// IsSysConsumerGroup and IsPredefinedGroup are MixAll's: groups that
// mqadmin exportMetadata leaves out.
func IsSysConsumerGroup(group string) bool { return strings.HasPrefix(group, "CID_RMQ_SYS_") }

// predefinedGroups is MixAll.PREDEFINE_GROUP_SET (a read-only lookup table).
var predefinedGroups = map[string]bool{
	"DEFAULT_CONSUMER": true, "DEFAULT_PRODUCER": true, "TOOLS_CONSUMER": true, "SCHEDULE_CONSUMER": true,
	"FILTERSRV_CONSUMER": true, "__MONITOR_CONSUMER": true, "CLIENT_INNER_PRODUCER": true, "SELF_TEST_P_GROUP": true,
	"SELF_TEST_C_GROUP": true, "CID_ONS-HTTP-PROXY": true, "CID_ONSAPI_PERMISSION": true, "CID_ONSAPI_OWNER": true,
	"CID_ONSAPI_PULL": true, "CID_RMQ_SYS_TRANS": true,
}

// IsPredefinedGroup reports MixAll.isPredefinedGroup.
func IsPredefinedGroup(group string) bool { return predefinedGroups[group] }
