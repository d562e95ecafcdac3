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

// NamespaceOrderTopicConfig is the KV namespace of order-topic configs.
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// GetBrokerClusterInfo asks a nameserver for the cluster table (106).
func (c *Client) GetBrokerClusterInfo(ctx context.Context) (*protocol.ClusterInfo, error) {
	var ci protocol.ClusterInfo
	if err := c.invokeNamesrvDecode(ctx, code.GetBrokerClusterInfo, nil, &ci); err != nil {
		return nil, err
	}
	if ci.BrokerAddrTable == nil {
		ci.BrokerAddrTable = map[string]protocol.BrokerData{}
	}
	if ci.ClusterAddrTable == nil {
		ci.ClusterAddrTable = map[string][]string{}
	}
	return &ci, nil
}

// GetTopicRoute asks a nameserver for a topic's route (105). An unknown
// topic is a *ResponseError with code TOPIC_NOT_EXIST.
func (c *Client) GetTopicRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	var r protocol.TopicRouteData
	if err := c.invokeNamesrvDecode(ctx, code.GetRouteInfoByTopic, map[string]string{"topic": topic}, &r); err != nil {
		return nil, err
	}
	if r.FilterServerTable == nil {
		r.FilterServerTable = map[string][]string{}
	}
	return &r, nil
}

// GetAllTopicList lists every topic the nameserver knows (206).
func (c *Client) GetAllTopicList(ctx context.Context) (*protocol.TopicList, error) {
	return c.topicList(ctx, code.GetAllTopicListFromNameserver, nil)
}

// GetTopicsByCluster lists the topics of one cluster (224).
func (c *Client) GetTopicsByCluster(ctx context.Context, cluster string) (*protocol.TopicList, error) {
	return c.topicList(ctx, code.GetTopicsByCluster, map[string]string{"cluster": cluster})
}

func (c *Client) topicList(ctx context.Context, reqCode int32, ext map[string]string) (*protocol.TopicList, error) {
	return decodeFromNamesrv[protocol.TopicList](ctx, c, reqCode, ext)
}

// DeleteTopicInNameServer removes a topic's route from one nameserver
// (216); an empty cluster removes it from every cluster.
func (c *Client) DeleteTopicInNameServer(ctx context.Context, namesrvAddr, cluster, topic string) error {
	ext := map[string]string{"topic": topic}
	if cluster != "" {
		ext["clusterName"] = cluster
	}
	_, err := c.invokeOK(ctx, namesrvAddr, code.DeleteTopicInNamesrv, ext, nil)
	return err
}

// GetNamesrvConfig fetches the configuration of every nameserver (319), in
// configuration order. Any failure fails the call, as in Java.
func (c *Client) GetNamesrvConfig(ctx context.Context) ([]NamesrvConfig, error) {
	if len(c.cfg.NameServers) == 0 {
		return nil, fmt.Errorf("%s: %w", code.RequestName(code.GetNamesrvConfig), ErrNoNameServer)
	}
	return c.serverConfigs(ctx, c.cfg.NameServers, code.GetNamesrvConfig)
}

// serverConfigs asks each server for its properties text with reqCode and
// stops at the first failure.
func (c *Client) serverConfigs(ctx context.Context, addrs []string, reqCode int32) ([]ServerConfig, error) {
	var out []ServerConfig
	for _, addr := range addrs {
		resp, err := c.invokeOK(ctx, addr, reqCode, nil, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, ServerConfig{Addr: addr, Config: ParseProperties(string(resp.Body))})
	}
	return out, nil
}

// ServerConfig is one server's configuration (a nameserver's or a
// controller's).
type ServerConfig struct {
	Addr   string     `json:"addr"`
	Config Properties `json:"config"`
}

// NamesrvConfig is one nameserver's configuration.
type NamesrvConfig = ServerConfig

// UpdateNamesrvConfig sends the properties to every nameserver (318). All
// servers are tried; the error joins the failures.
func (c *Client) UpdateNamesrvConfig(ctx context.Context, props map[string]string) error {
	if len(props) == 0 {
		return nil
	}
	_, err := c.eachNamesrv(ctx, code.UpdateNamesrvConfig, nil, []byte(FormatProperties(props)))
	return err
}

// PutKVConfig stores a KV entry on every nameserver (100).
func (c *Client) PutKVConfig(ctx context.Context, namespace, key, value string) error {
	_, err := c.eachNamesrv(ctx, code.PutKVConfig, map[string]string{"namespace": namespace, "key": key, "value": value}, nil)
	return err
}

// DeleteKVConfig removes a KV entry from every nameserver (102).
func (c *Client) DeleteKVConfig(ctx context.Context, namespace, key string) error {
	_, err := c.eachNamesrv(ctx, code.DeleteKVConfig, map[string]string{"namespace": namespace, "key": key}, nil)
	return err
}

// GetKVConfig reads a KV entry from a nameserver (101); a missing entry is
// a *ResponseError with code QUERY_NOT_FOUND.
func (c *Client) GetKVConfig(ctx context.Context, namespace, key string) (string, error) {
	resp, _, err := c.invokeNamesrvOK(ctx, code.GetKVConfig, map[string]string{"namespace": namespace, "key": key}, nil)
	if err != nil {
		return "", err
	}
	return resp.Ext("value"), nil
}

// GetKVListByNamespace reads a whole KV namespace from a nameserver (219).
func (c *Client) GetKVListByNamespace(ctx context.Context, namespace string) (map[string]string, error) {
	var kv protocol.KVTable
	if err := c.invokeNamesrvDecode(ctx, code.GetKVListByNamespace, map[string]string{"namespace": namespace}, &kv); err != nil {
		return nil, err
	}
	return kv.Table, nil
}

// CreateOrUpdateOrderConf records a topic's order configuration
// ("brokerName:queueNums[;...]") in namespace ORDER_TOPIC_CONFIG. With
// isCluster the value replaces the entry; otherwise it is merged into the
// existing one by broker name (Java's createOrUpdateOrderConf).
func (c *Client) CreateOrUpdateOrderConf(ctx context.Context, topic, value string, isCluster bool) error {
	if !isCluster {
		old, err := c.GetKVConfig(ctx, NamespaceOrderTopicConfig, topic)
		if err != nil && !IsCode(err, code.QueryNotFound) {
			c.log.Warn("admin: read order conf", "topic", topic, "err", err)
		}
		value = mergeOrderConf(old, value)
	}
	return c.PutKVConfig(ctx, NamespaceOrderTopicConfig, topic, value)
}

// mergeOrderConf replaces or appends the "broker:n" entry of value's broker.
func mergeOrderConf(old, value string) string {
	name := strings.SplitN(value, ":", 2)[0]
	var parts []string
	replaced := false
	for _, p := range strings.Split(old, ";") {
		if strings.TrimSpace(p) == "" {
			continue
		}
		if strings.SplitN(p, ":", 2)[0] == name {
			if !replaced {
				parts = append(parts, value)
				replaced = true
			}
			continue
		}
		parts = append(parts, p)
	}
	if !replaced {
		parts = append(parts, value)
	}
	return strings.Join(parts, ";")
}

// PermResult is one nameserver's answer to a wipe/add write-perm request.
type PermResult struct {
	NameServer string `json:"nameServer"`
	Count      int    `json:"topicCount"`
	Err        error  `json:"-"`
}

// WipeWritePermOf removes the write permission of a broker's queues in one
// nameserver (205) and returns how many topics were changed.
func (c *Client) WipeWritePermOf(ctx context.Context, namesrvAddr, brokerName string) (int, error) {
	return c.perm(ctx, namesrvAddr, code.WipeWritePermOfBroker, "wipeTopicCount", brokerName)
}

// AddWritePermOf restores the write permission of a broker's queues in one
// nameserver (327) and returns how many topics were changed.
func (c *Client) AddWritePermOf(ctx context.Context, namesrvAddr, brokerName string) (int, error) {
	return c.perm(ctx, namesrvAddr, code.AddWritePermOfBroker, "addTopicCount", brokerName)
}

// WipeWritePerm is WipeWritePermOf on every nameserver; the error joins the
// failures, which are also in the results.
func (c *Client) WipeWritePerm(ctx context.Context, brokerName string) ([]PermResult, error) {
	return c.permAll(ctx, brokerName, c.WipeWritePermOf, code.WipeWritePermOfBroker)
}

// AddWritePerm is AddWritePermOf on every nameserver.
func (c *Client) AddWritePerm(ctx context.Context, brokerName string) ([]PermResult, error) {
	return c.permAll(ctx, brokerName, c.AddWritePermOf, code.AddWritePermOfBroker)
}

func (c *Client) permAll(ctx context.Context, brokerName string, f func(context.Context, string, string) (int, error), reqCode int32) ([]PermResult, error) {
	if len(c.cfg.NameServers) == 0 {
		return nil, fmt.Errorf("%s: %w", code.RequestName(reqCode), ErrNoNameServer)
	}
	var out []PermResult
	var errs []error
	for _, ns := range c.cfg.NameServers {
		n, err := f(ctx, ns, brokerName)
		out = append(out, PermResult{NameServer: ns, Count: n, Err: err})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

func (c *Client) perm(ctx context.Context, addr string, reqCode int32, countKey, brokerName string) (int, error) {
	resp, err := c.invokeOK(ctx, addr, reqCode, map[string]string{"brokerName": brokerName}, nil)
	if err != nil {
		return 0, err
	}
	s := resp.Ext(countKey)
	if s == "" {
		return 0, fmt.Errorf("%s to %s: response misses %s", code.RequestName(reqCode), addr, countKey)
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%s to %s: bad %s %q", code.RequestName(reqCode), addr, countKey, s)
	}
	return n, nil
}

// ClusterMasters reads the cluster info (106) and returns the master
// address of every broker name of cluster, as MasterAddrs.
func (c *Client) ClusterMasters(ctx context.Context, cluster string) ([]string, error) {
	ci, err := c.GetBrokerClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	return MasterAddrs(ci, cluster)
}
