package command

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rmqgo/rmq/pkg/client"
	"github.com/rmqgo/rmq/pkg/message"
	"github.com/rmqgo/rmq/pkg/protocol"
)

// printMsg and printMsgByQueue (rocketmq-tools PrintMessageSubCommand,
// PrintMessageByQueueCommand): pull a topic's (or one queue's) messages as
// group TOOLS_CONSUMER, 32 at a time, and print them as MessageExt.toString.
// Java's long option names end with a space ("charsetName "); ours are the
// trimmed names (commons-cli takes --charsetName as their prefix too).

// printCharset checks -c: only UTF-8 bodies are decoded (Java takes any
// charset the JVM knows).
func printCharset(cmd *cobra.Command, v string) error {
	if !cmd.Flags().Changed("charsetName") {
		return nil
	}
	if cs := strings.TrimSpace(v); !strings.EqualFold(cs, "UTF-8") && !strings.EqualFold(cs, "UTF8") {
		return usagef("unsupported charset %q: only UTF-8", cs)
	}
	return nil
}

// printBounds is the [min, max) a print command reads: the queue's min and
// max offsets, or the offsets searched for -b and -e.
func (a *app) printBounds(ctx context.Context, cmd *cobra.Command, pc *client.PullConsumer, mq protocol.MessageQueue, begin, end int64) (int64, int64, error) {
	minOff, err := pc.GetMinOffset(ctx, mq)
	if err != nil {
		return 0, 0, err
	}
	maxOff, err := pc.GetMaxOffset(ctx, mq)
	if err != nil {
		return 0, 0, err
	}
	if cmd.Flags().Changed("beginTimestamp") {
		if minOff, err = pc.SearchOffset(ctx, mq, time.UnixMilli(begin)); err != nil {
			return 0, 0, err
		}
	}
	if cmd.Flags().Changed("endTimestamp") {
		if maxOff, err = pc.SearchOffset(ctx, mq, time.UnixMilli(end)); err != nil {
			return 0, 0, err
		}
	}
	return minOff, maxOff, nil
}

// printTimestamps parses -b and -e (milliseconds or yyyy-MM-dd#HH:mm:ss:SSS).
func (a *app) printTimestamps(cmd *cobra.Command, b, e string) (int64, int64, error) {
	var begin, end int64
	var err error
	if cmd.Flags().Changed("beginTimestamp") {
		if begin, err = javaTimestamp("b", strings.TrimSpace(b), a.env.Location); err != nil {
			return 0, 0, err
		}
	}
	if cmd.Flags().Changed("endTimestamp") {
		if end, err = javaTimestamp("e", strings.TrimSpace(e), a.env.Location); err != nil {
			return 0, 0, err
		}
	}
	return begin, end, nil
}

// printedQueue is one queue of printMsg / printMsgByQueue in JSON.
type printedQueue struct {
	Queue      protocol.MessageQueue `json:"queue"`
	MinOffset  int64                 `json:"minOffset"`
	MaxOffset  int64                 `json:"maxOffset"`
	Messages   []messageJSON         `json:"messages"`
	LastStatus string                `json:"lastStatus,omitempty"`
	NextOffset int64                 `json:"nextOffset"`
	Error      string                `json:"error,omitempty"`
}

// printPull pulls [minOff, maxOff) of mq with the expression, 32 at a
// time, handing each found message to found. printMsg reports no-match
// and the end (report); printMsgByQueue stops quietly at either. A failed
// pull ends the queue (Java prints the stack trace and goes on).
func (a *app) printPull(ctx context.Context, pc *client.PullConsumer, q *printedQueue, expr string, report bool, found func(sm *shownMessage)) error {
	mq := q.Queue
	w := a.env.Stdout
	for off := q.MinOffset; off < q.MaxOffset; {
		res, err := pc.Pull(ctx, client.PullRequest{Queue: mq, Offset: off, MaxNums: 32, Expression: expr})
		if err != nil {
			a.warn("pull %s at %d: %v", javaMessageQueue(mq), off, err)
			q.Error = err.Error()
			return err
		}
		off = res.NextBeginOffset
		q.NextOffset, q.LastStatus = off, res.Status.String()
		switch res.Status {
		case client.PullFound:
			for _, m := range res.Messages {
				found(fromPulled(m, mq.BrokerName))
			}
		case client.PullNoMatchedMsg:
			if !report {
				return nil
			}
			if !a.json() {
				fmt.Fprintf(w, "%s no matched msg. status=%s, offset=%d\n", javaMessageQueue(mq), res.Status, off)
			}
		default: // NO_NEW_MSG, OFFSET_ILLEGAL
			if report && !a.json() {
				fmt.Fprintf(w, "%s print msg finished. status=%s, offset=%d\n", javaMessageQueue(mq), res.Status, off)
			}
			return nil
		}
	}
	return nil
}

// printedMessage prints one message as Java's printMessage and returns its
// JSON form.
func (a *app) printedMessage(sm *shownMessage, printBody bool) messageJSON {
	body := "NOT PRINT BODY"
	if printBody {
		body = javaUTF8(sm.Body)
	}
	if !a.json() {
		fmt.Fprintf(a.env.Stdout, "MSGID: %s %s BODY: %s\n", sm.ClientMsgID(), sm.messageExtString(), body)
	}
	j := sm.json()
	if printBody {
		j.Body = &body
	}
	return j
}

// ---- printMsg ----

type printMsgOpts struct{ topic, charset, sub, begin, end, printBody, lmqParent string }

func newPrintMsg(a *app) *cobra.Command {
	var o printMsgOpts
	c := newCmd("printMsg", "Print Message Detail.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.charset, "c", "charsetName", "CharsetName(eg: UTF-8,GBK)")
	stringOpt(fs, &o.sub, "s", "subExpression", "Subscribe Expression(eg: TagA || TagB)")
	stringOpt(fs, &o.begin, "b", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	stringOpt(fs, &o.end, "e", "endTimestamp", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	stringOpt(fs, &o.printBody, "d", "printBody", "print body")
	stringOpt(fs, &o.lmqParent, "l", "lmqParentTopic", "Lmq parent topic, lmq is used to find the route.")
	markRequired(c, "topic")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.printMsg(cmd.Context(), cmd, o) })
	return c
}

// printMsg is PrintMessageSubCommand: every readable queue of the topic (of
// -l's route for an LMQ), in the Java tool's HashSet order, from its min
// (or -b's) offset to its max (or -e's), a separator line after each.
func (a *app) printMsg(ctx context.Context, cmd *cobra.Command, o printMsgOpts) error {
	changed := cmd.Flags().Changed
	topic := strings.TrimSpace(o.topic)
	if err := printCharset(cmd, o.charset); err != nil {
		return err
	}
	expr := "*"
	if changed("subExpression") {
		expr = strings.TrimSpace(o.sub)
	}
	printBody := !changed("printBody") || javaBool(o.printBody)
	begin, end, err := a.printTimestamps(cmd, o.begin, o.end)
	if err != nil {
		return err
	}
	routeTopic := topic
	if changed("lmqParentTopic") {
		routeTopic = strings.TrimSpace(o.lmqParent)
	}
	w := a.env.Stdout
	return a.withPullConsumer(ctx, toolsConsumerGroup, func(pc *client.PullConsumer) error {
		mqs, err := pc.Queues(ctx, routeTopic)
		if err != nil {
			return err
		}
		for i := range mqs {
			mqs[i].Topic = topic
		}
		queues := []printedQueue{}
		failed := 0
		for _, mq := range javaHashSetOrder(mqs) {
			minOff, maxOff, err := a.printBounds(ctx, cmd, pc, mq, begin, end)
			if err != nil {
				return err
			}
			if !a.json() {
				fmt.Fprintf(w, "minOffset=%d, maxOffset=%d, %s\n", minOff, maxOff, javaMessageQueue(mq))
			}
			q := printedQueue{Queue: mq, MinOffset: minOff, MaxOffset: maxOff, NextOffset: minOff, Messages: []messageJSON{}}
			if err := a.printPull(ctx, pc, &q, expr, true, func(sm *shownMessage) {
				q.Messages = append(q.Messages, a.printedMessage(sm, printBody))
			}); err != nil {
				failed++
			}
			queues = append(queues, q)
			if !a.json() {
				fmt.Fprintf(w, "--------------------------------------------------------\n")
			}
		}
		if a.json() {
			if err := writeJSONField(w, "queues", queues); err != nil {
				return err
			}
		}
		if failed > 0 {
			return &partialError{n: failed}
		}
		return nil
	})
}

// ---- printMsgByQueue ----

type printMsgByQueueOpts struct {
	topic, broker, queueID, charset, sub, begin, end, printMsg, printBody, calculate string
}

func newPrintMsgByQueue(a *app) *cobra.Command {
	var o printMsgByQueueOpts
	c := newCmd("printMsgByQueue", "Print Message Detail by queueId.")
	fs := c.Flags()
	stringOpt(fs, &o.topic, "t", "topic", "topic name")
	stringOpt(fs, &o.broker, "a", "brokerName", "broker name")
	stringOpt(fs, &o.queueID, "i", "queueId", "queue id")
	stringOpt(fs, &o.charset, "c", "charsetName", "CharsetName(eg: UTF-8,GBK)")
	stringOpt(fs, &o.sub, "s", "subExpression", "Subscribe Expression(eg: TagA || TagB)")
	stringOpt(fs, &o.begin, "b", "beginTimestamp", "Begin timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	stringOpt(fs, &o.end, "e", "endTimestamp", "End timestamp[currentTimeMillis|yyyy-MM-dd#HH:mm:ss:SSS]")
	stringOpt(fs, &o.printMsg, "p", "printMsg", "print msg. eg: true | false(default)")
	stringOpt(fs, &o.printBody, "d", "printBody", "print body. eg: true | false(default)")
	stringOpt(fs, &o.calculate, "f", "calculate", "calculate by tag. eg: true | false(default)")
	markRequired(c, "topic", "brokerName", "queueId")
	c.RunE = a.run(func(cmd *cobra.Command) error { return a.printMsgByQueue(cmd.Context(), cmd, o) })
	return c
}

// printMsgByQueue is PrintMessageByQueueCommand: one queue from its min (or
// -b's) offset to its max (or -e's); with -p the messages, with -f the
// count of each tag, most frequent first.
func (a *app) printMsgByQueue(ctx context.Context, cmd *cobra.Command, o printMsgByQueueOpts) error {
	changed := cmd.Flags().Changed
	if err := printCharset(cmd, o.charset); err != nil {
		return err
	}
	printMsgs := changed("printMsg") && javaBool(o.printMsg)
	printBody := changed("printBody") && javaBool(o.printBody)
	calc := changed("calculate") && javaBool(o.calculate)
	expr := "*"
	if changed("subExpression") {
		expr = strings.TrimSpace(o.sub)
	}
	qid, err := javaInt("i", o.queueID)
	if err != nil {
		return err
	}
	begin, end, err := a.printTimestamps(cmd, o.begin, o.end)
	if err != nil {
		return err
	}
	mq := protocol.MessageQueue{Topic: strings.TrimSpace(o.topic), BrokerName: strings.TrimSpace(o.broker), QueueID: qid}
	return a.withPullConsumer(ctx, toolsConsumerGroup, func(pc *client.PullConsumer) error {
		minOff, maxOff, err := a.printBounds(ctx, cmd, pc, mq, begin, end)
		if err != nil {
			return err
		}
		q := printedQueue{Queue: mq, MinOffset: minOff, MaxOffset: maxOff, NextOffset: minOff, Messages: []messageJSON{}}
		tags := map[string]int64{}
		var tagOrder []string
		pullErr := a.printPull(ctx, pc, &q, expr, false, func(sm *shownMessage) {
			if calc {
				if tag := sm.Properties[message.PropertyTags]; strings.TrimSpace(tag) != "" {
					if _, seen := tags[tag]; !seen {
						tagOrder = append(tagOrder, tag)
					}
					tags[tag]++
				}
			}
			if printMsgs {
				q.Messages = append(q.Messages, a.printedMessage(sm, printBody))
			}
		})
		// Java sorts the HashMap's entries by count, most first (a stable
		// sort: equal counts keep the HashMap's order).
		tagOrder = javaHashOrder(tagOrder, hashMapDefault, false)
		sort.SliceStable(tagOrder, func(i, j int) bool { return tags[tagOrder[i]] > tags[tagOrder[j]] })
		if a.json() {
			type tagCount struct {
				Tag   string `json:"tag"`
				Count int64  `json:"count"`
			}
			counts := []tagCount{}
			for _, t := range tagOrder {
				counts = append(counts, tagCount{t, tags[t]})
			}
			if err := writeJSON(a.env.Stdout, struct {
				printedQueue
				Tags []tagCount `json:"tags,omitempty"`
			}{q, counts}); err != nil {
				return err
			}
		} else {
			for _, t := range tagOrder {
				fmt.Fprintf(a.env.Stdout, "Tag: %-30s Count: %d\n", t, tags[t])
			}
		}
		if pullErr != nil {
			return &partialError{n: 1}
		}
		return nil
	})
}
