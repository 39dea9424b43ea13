from gateway.mesh.store.store_node import main

main()
