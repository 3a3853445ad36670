"""The bus contract: message types, subjects and stream settings for services and subscribers."""
