module github.com/sandboxd/sandboxd/sdk/go

go 1.19
