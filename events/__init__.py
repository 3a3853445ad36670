"""The bus contract: message types, subjects and stream settings shared by every service and subscriber."""
