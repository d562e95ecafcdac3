package subscription

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/rmqgo/rmq/broker/processor"
	"github.com/rmqgo/rmq/pkg/protocol"
	"github.com/rmqgo/rmq/remoting"
	"github.com/rmqgo/rmq/remoting/code"
)

// Handlers maps the subscription group admin codes to their handlers. They
// tolerate a nil channel, so tests may call them directly.
func (m *Manager) Handlers() map[int32]remoting.Handler {
	return map[int32]remoting.Handler{
		code.UpdateAndCreateSubscriptionGroup:     m.updateAndCreate,
		code.UpdateAndCreateSubscriptionGroupList: m.updateAndCreateList,
		code.GetAllSubscriptionGroupConfig:        m.getAll,
		code.DeleteSubscriptionGroup:              m.delete,
		code.GetSubscriptionGroupConfig:           m.getOne,
		code.UpdateAndGetGroupForbidden:           m.updateAndGetForbidden,
	}
}

// groupForbidden is Java's GroupForbidden.
type groupForbidden struct {
	Group    string `json:"group"`
	Readable bool   `json:"readable"`
	Topic    string `json:"topic"`
}

// updateAndGetForbidden is UPDATE_AND_GET_GROUP_FORBIDDEN (353): with
// readable=false the group may no longer read the topic's forbidden bit is
// set, with true it is cleared; the answer is the state after.
func (m *Manager) updateAndGetForbidden(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group, topic := f.Str("group"), f.Str("topic")
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	if r, has := req.ExtFields["readable"]; has {
		readable, err := strconv.ParseBool(r)
		if err != nil {
			return nil, processor.BadRequestf("readable %q: %v", r, err)
		}
		if err := m.UpdateForbidden(group, topic, IndexPermRead, !readable); err != nil {
			return nil, err
		}
	}
	body := groupForbidden{Group: group, Topic: topic, Readable: m.Forbidden(group, topic)&(1<<IndexPermRead) == 0}
	return processor.Reply(req, "group forbidden", body)
}

// Register installs Handlers on the admin pool.
func (m *Manager) Register(r processor.Registrar) {
	processor.RegisterAll(r, m.Handlers(), processor.PoolAdmin)
}

func (m *Manager) updateAndCreate(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	if len(bytes.TrimSpace(req.Body)) == 0 {
		return nil, remoting.Errorf(code.InvalidParameter, "the request body (SubscriptionGroupConfig) is empty")
	}
	c, err := DecodeGroupConfig(req.Body)
	if err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "decode SubscriptionGroupConfig: %v", err)
	}
	if err := m.updateAnswer(c); err != nil {
		return nil, err
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// updateAnswer is Update with its error as the answer: INVALID_PARAMETER for a
// bad name or attribute (Java answers SYSTEM_ERROR with the exception's
// text when an attribute fails its check; INVALID_PARAMETER says what it
// is), else SYSTEM_ERROR.
func (m *Manager) updateAnswer(c GroupConfig) error {
	err := m.Update(c)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrInvalidGroup) || errors.Is(err, ErrInvalidAttribute) {
		return processor.BadRequest(err)
	}
	return remoting.Errorf(code.SystemError, "update subscription group %s: %v", c.GroupName, err)
}

// updateAndCreateList answers UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST
// (225), body SubscriptionGroupList {"groupConfigList":[...]}: as Apache's
// AdminBrokerProcessor.updateAndCreateSubscriptionGroupList every group
// name is checked (INVALID_PARAMETER with the first bad one) before any
// group is created or updated.
func (m *Manager) updateAndCreateList(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	var list struct {
		GroupConfigList []json.RawMessage `json:"groupConfigList"`
	}
	if err := json.Unmarshal(req.Body, &list); err != nil {
		return nil, remoting.Errorf(code.InvalidParameter, "decode SubscriptionGroupList: %v", err)
	}
	configs := make([]GroupConfig, 0, len(list.GroupConfigList))
	for i, raw := range list.GroupConfigList {
		c, err := DecodeGroupConfig(raw)
		if err != nil {
			return nil, remoting.Errorf(code.InvalidParameter, "decode SubscriptionGroupConfig #%d: %v", i, err)
		}
		if err := protocol.ValidateGroup(c.GroupName); err != nil {
			return nil, processor.BadRequest(err)
		}
		configs = append(configs, c)
	}
	for _, c := range configs {
		if err := m.updateAnswer(c); err != nil {
			return nil, err
		}
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

// getAll answers with the whole table; client-go decodes it with
// encoding/json, so it is standard JSON (no bare keys).
func (m *Manager) getAll(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	w := m.Wrapper()
	resp, err := processor.Reply(req, "subscription groups", w)
	if err != nil {
		return nil, err
	}
	resp.SetExt("totalGroupNum", strconv.Itoa(len(w.SubscriptionGroupTable)))
	return resp, nil
}

func (m *Manager) delete(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	f := protocol.FieldsOf(req.ExtFields)
	group := f.Str("groupName")
	clean := f.OptBool("cleanOffset", false)
	if err := f.Err(); err != nil {
		return nil, processor.BadRequest(err)
	}
	if _, err := m.Delete(group); err != nil {
		return nil, remoting.Errorf(code.SystemError, "delete subscription group %s: %v", group, err)
	}
	if clean && m.opts.CleanOffsets != nil {
		m.opts.CleanOffsets(group)
	}
	return remoting.NewResponse(req, code.Success, ""), nil
}

func (m *Manager) getOne(_ context.Context, _ *remoting.Channel, req *remoting.Command) (*remoting.Command, error) {
	group, err := processor.StrField(req, "group")
	if err != nil {
		return nil, err
	}
	c, ok := m.Find(group)
	if !ok {
		return nil, remoting.Errorf(code.SubscriptionGroupNotExist, "No group in this broker: %s", group)
	}
	return processor.Reply(req, "subscription group "+group, c)
}
