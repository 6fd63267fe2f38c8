"""Explorers: drive apps through WebDriver/Appium and build UI state-transition graphs."""
