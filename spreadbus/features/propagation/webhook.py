"""What each webhook replica runs of propagation: nothing yet; the policies' validation is
:mod:`.core.validation`, which ``spreadbus validate`` runs offline."""
