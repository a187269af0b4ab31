from sandboxd import Client, SandboxError

# unix:///run/sandboxd/api.sock by default (or $SANDBOXD_ENDPOINT); a TCP listener needs a key:
# Client("http://127.0.0.1:8080", api_key="...")
with Client() as client:
    result = client.execute("python", "print(sum(range(10)))")
    print("stdout:", result.stdout.strip())

    # A failed program raises the SandboxError of its verdict, the whole result attached.
    try:
        client.execute("python", "import time; time.sleep(10)", limits={"timeout_ms": 500})
    except SandboxError as e:
        print("error type:", e.type)
        print(e.result.summary.splitlines()[0])

    # Submit without waiting, then follow the output live.
    execution_id = client.submit("bash", "for i in 1 2 3; do echo line $i; sleep 0.2; done")
    for event in client.events(execution_id):
        if event.event == "stdout":
            print("live:", event.text, end="")
        elif event.event == "result":
            print("status:", event.result.status)
