package admin

import (
	"context"

	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting/code"
)

// GetBrokerRuntimeInfo reads a broker's runtime statistics (28), the
// KVTable behind clusterList and brokerStatus.
func (c *Client) GetBrokerRuntimeInfo(ctx context.Context, brokerAddr string) (map[string]string, error) {
	var kv protocol.KVTable
	if err := c.invokeDecode(ctx, brokerAddr, code.GetBrokerRuntimeInfo, nil, &kv); err != nil {
		return nil, err
	}
	if kv.Table == nil {
		kv.Table = map[string]string{}
	}
	return kv.Table, nil
}

// GetBrokerConfig reads a broker's configuration (26), in the order of the
// broker's properties text.
func (c *Client) GetBrokerConfig(ctx context.Context, brokerAddr string) (Properties, error) {
	resp, err := c.invokeOK(ctx, brokerAddr, code.GetBrokerConfig, nil, nil)
	if err != nil {
		return nil, err
	}
	return ParseProperties(string(resp.Body)), nil
}

// UpdateBrokerConfig changes a broker's configuration (25). As the Java
// client, it refuses a brokerPermission outside [0, 8) before sending, and
// sends nothing for an empty map.
func (c *Client) UpdateBrokerConfig(ctx context.Context, brokerAddr string, props map[string]string) error {
	if err := validateBrokerConfig(props); err != nil {
		return err
	}
	if len(props) == 0 {
		return nil
	}
	_, err := c.invokeOK(ctx, brokerAddr, code.UpdateBrokerConfig, nil, []byte(FormatProperties(props)))
	return err
}
