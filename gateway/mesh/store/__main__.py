from gateway.mesh.store.node import main

main()
