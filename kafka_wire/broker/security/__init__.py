"""Security of the broker: ACL bindings and their filters (:mod:`.acls`), the authorizer with
Kafka's ``StandardAuthorizer`` semantics (:mod:`.authorizer`) and the checks the API handlers
make with it (:mod:`.checks`)."""
