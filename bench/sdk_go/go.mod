module github.com/sandboxd/sandboxd/bench/sdk_go

go 1.19

require github.com/sandboxd/sandboxd/sdk/go v0.0.0

replace github.com/sandboxd/sandboxd/sdk/go => ../../sdk/go
