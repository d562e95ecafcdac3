module github.com/rmqgo/rmq/remoting

go 1.26
