"""No admission handler yet: the policies are validated offline (:mod:`..core.validation`)."""
